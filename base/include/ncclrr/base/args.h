#pragma once
// The one command-line parser of ncclrr's programs (the `ncclrr` verbs, ncclrr-viewer,
// ncclrr-example, the benchmarks): small and strict. Every flag is declared; unknown flags,
// missing values and bad numbers are UsageErrors naming the program.
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ncclrr {

// A mistake in the command line: the program prints it with a pointer to --help, exit 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Args {
 public:
  // `program` as the user typed it ("ncclrr check", "ncclrr-viewer"): errors name it.
  Args(std::string program, const std::vector<std::string>& args);
  Args(std::string program, int argc, char** argv, int first = 1);

  // Declarations. `Flag` has no value; `Option` takes one ("--x V" or "--x=V").
  Args& Flag(const std::string& name);
  Args& Option(const std::string& name);
  // Parses; positional arguments are collected; "--" ends flags (the rest is `rest()`).
  void Parse();

  bool Has(const std::string& name) const;
  std::optional<std::string> Get(const std::string& name) const;
  std::string GetOr(const std::string& name, const std::string& fallback) const;
  long long GetInt(const std::string& name, long long fallback) const;
  // A size in bytes, with an optional unit K, M, G or T (powers of 1024; "8G", "1.5GB").
  uint64_t GetBytes(const std::string& name, uint64_t fallback) const;
  const std::vector<std::string>& positional() const { return positional_; }
  const std::vector<std::string>& rest() const { return rest_; }
  // Exactly `n` positionals, else UsageError naming `what`.
  const std::string& Positional(size_t i, const std::string& what) const;

 private:
  std::string program_;
  std::vector<std::string> raw_;
  std::map<std::string, bool> declared_;  // name -> takes a value
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_, rest_;
};

}  // namespace ncclrr
