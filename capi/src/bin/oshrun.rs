//! `oshrun`: starts an OpenSHMEM job. An alias of `vkshmrun` (found next to
//! this executable, else on `PATH`) that also takes the options people
//! type for oshrun and mpirun: `-np N`, `-n N`, `--np N`, `-N N`.

use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode};

/// The arguments in vkshmrun's spelling: the PE count options before the
/// program become `-n N`; the program and its arguments are left alone.
fn translate(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if !a.starts_with('-') {
            out.extend(args[i..].iter().cloned());
            break;
        }
        match a.as_str() {
            "-np" | "--np" | "-N" | "-c" => out.push("-n".into()),
            s if s.starts_with("-np=") || s.starts_with("--np=") => {
                out.push(format!("--npes={}", &s[s.find('=').unwrap_or(0) + 1..]));
            }
            s => out.push(s.into()),
        }
        i += 1;
    }
    out
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let launcher = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join("vkshmrun")))
        .filter(|p| p.exists())
        .map_or_else(|| "vkshmrun".into(), |p| p.into_os_string());
    let err = Command::new(&launcher).args(translate(&args)).exec();
    eprintln!("oshrun: cannot run {}: {err}", launcher.to_string_lossy());
    ExitCode::from(2)
}

#[cfg(test)]
mod tests {
    use super::translate;

    fn t(a: &[&str]) -> Vec<String> {
        translate(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn pe_count_spellings_become_dash_n() {
        assert_eq!(t(&["-np", "4", "./a"]), ["-n", "4", "./a"]);
        assert_eq!(
            t(&["--np", "3", "./a", "-np", "2"]),
            ["-n", "3", "./a", "-np", "2"]
        );
        assert_eq!(
            t(&["-n", "2", "--wait-timeout", "5", "./a"]),
            ["-n", "2", "--wait-timeout", "5", "./a"]
        );
        assert_eq!(t(&["-np=8", "./a"]), ["--npes=8", "./a"]);
    }
}
