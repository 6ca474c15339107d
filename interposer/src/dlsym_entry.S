/* ncclrr's exported dlsym (see dlsym_hook.cc). Lookups in RTLD_DEFAULT (0) and RTLD_NEXT (-1)
 * depend on the caller's identity, which glibc takes from its own return address: they jump to
 * glibc's dlsym with the caller's return address still on top of the stack. Other handles go to
 * ncclrr_dlsym_for_handle, also by a jump. x86-64 only; elsewhere dlsym is not interposed. */
#if defined(__x86_64__)
        .text
        .globl  dlsym
        .type   dlsym, @function
dlsym:
        .cfi_startproc
        cmpq    $-1, %rdi
        je      1f
        testq   %rdi, %rdi
        je      1f
        jmp     ncclrr_dlsym_for_handle
1:
        movq    ncclrr_real_dlsym(%rip), %rax
        testq   %rax, %rax
        je      2f
        jmp     *%rax
2:      /* glibc's dlsym not known yet: find it, keeping the arguments */
        pushq   %rdi
        .cfi_adjust_cfa_offset 8
        pushq   %rsi
        .cfi_adjust_cfa_offset 8
        subq    $8, %rsp
        .cfi_adjust_cfa_offset 8
        call    ncclrr_resolve_real_dlsym
        addq    $8, %rsp
        .cfi_adjust_cfa_offset -8
        popq    %rsi
        .cfi_adjust_cfa_offset -8
        popq    %rdi
        .cfi_adjust_cfa_offset -8
        jmp     *%rax
        .cfi_endproc
        .size   dlsym, .-dlsym
#endif
        .section .note.GNU-stack,"",@progbits
