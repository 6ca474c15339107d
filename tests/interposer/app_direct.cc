// The workload with NCCL linked into the global scope (DT_NEEDED of a DT_NEEDED library).
extern "C" int ncclrr_test_workload_main(int argc, char** argv);

int main(int argc, char** argv) { return ncclrr_test_workload_main(argc, argv); }
