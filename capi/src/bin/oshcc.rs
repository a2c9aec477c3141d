//! `oshcc`: compiles and links a C program against vkshmem's OpenSHMEM
//! library. Its arguments go to the C compiler (`$OSHCC_CC`, else `cc`)
//! with the header's directory on the include path and, when linking,
//! `libvkshmem_c` and its run path added. The header and the library are
//! found next to this executable (`target/<profile>/include/shmem.h`,
//! `target/<profile>/libvkshmem_c.so`). `oshcc --showme` prints the
//! command instead of running it.

use std::path::PathBuf;
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let show = args.iter().any(|a| a == "--showme");
    args.retain(|a| a != "--showme");
    let dir = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("."));
    let inc = dir.join("include");
    if !inc.join("shmem.h").exists() {
        eprintln!(
            "oshcc: {} is missing: build the library first (cargo build --release -p vkshmem-c)",
            inc.join("shmem.h").display()
        );
        return ExitCode::from(2);
    }
    let compile_only = args
        .iter()
        .any(|a| a == "-c" || a == "-E" || a == "-S" || a == "-M");
    let cc = vkshmem_host::config::oshcc_cc(vkshmem_host::config::env);
    let mut cmd = Command::new(&cc);
    cmd.arg(format!("-I{}", inc.display()));
    cmd.args(&args);
    if !compile_only {
        if !dir.join("libvkshmem_c.so").exists() {
            eprintln!(
                "oshcc: {} is missing: build the library first (cargo build --release -p vkshmem-c)",
                dir.join("libvkshmem_c.so").display()
            );
            return ExitCode::from(2);
        }
        cmd.arg(format!("-L{}", dir.display()))
            .arg(format!("-Wl,-rpath,{}", dir.display()))
            .arg("-lvkshmem_c")
            .arg("-lm");
    }
    if show || args.is_empty() {
        let line: Vec<String> = std::iter::once(cc.clone())
            .chain(cmd.get_args().map(|a| a.to_string_lossy().into_owned()))
            .collect();
        println!("{}", line.join(" "));
        return ExitCode::SUCCESS;
    }
    match cmd.status() {
        Ok(s) if s.success() => ExitCode::SUCCESS,
        Ok(s) => ExitCode::from(s.code().unwrap_or(1).clamp(1, 255) as u8),
        Err(e) => {
            eprintln!("oshcc: cannot run the C compiler {cc}: {e}");
            ExitCode::from(2)
        }
    }
}
