// rust-workload: the Rust program tests/e2e/test_rust.py traces, to show
// Rust functions named as Rust paths in both manglings and panics counted as
// C++ exceptions are. It speaks the workload protocol of
// tests/programs/workloads: prints "ready pid=N", with --wait-signal starts
// only on SIGUSR1, and writes its ground truth to --truth (truth.rs), naming
// each function by the path the program itself knows it by (module_path!(),
// std::any::type_name), which is what a tracer should show.
//
// Scenarios (--scenario, default "all"):
//   all    on the main thread: 200 calls of handler::process; 150 of
//          handler::generic::<u64> and 100 of handler::generic::<&str> (two
//          instantiations of one generic, whose legacy names differ only by
//          their hash); 120 of handler::risky, every third of which panics
//          inside it and is caught by std::panic::catch_unwind in an untraced
//          caller: 40 calls never return (truth: "abandoned").
//   abort  50 calls of handler::process, then the truth, then a call of
//          handler::risky that panics: built with -C panic=abort, the process
//          ends there (SIGABRT) with that call in flight (truth: abandoned 1).
//
// Every traced function is #[inline(never)] and times its own body.
mod truth;

use std::io::Write as _;
use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant};

use truth::{Body, FunctionTruth};

pub mod handler {
    use super::truth::Body;
    use std::time::Duration;

    pub const PATH: &str = module_path!();

    #[inline(never)]
    pub fn process(request: u64, body: &mut Body) -> u64 {
        body.begin();
        std::thread::sleep(Duration::from_micros(200));
        let answer = request.wrapping_mul(2_654_435_761);
        body.end();
        answer
    }

    #[inline(never)]
    pub fn generic<T: std::fmt::Debug>(value: T, body: &mut Body) -> usize {
        body.begin();
        std::thread::sleep(Duration::from_micros(300));
        let length = format!("{:?}", value).len();
        body.end();
        length
    }

    // Panics for every third request (request % 3 == 2), from its own frame.
    #[inline(never)]
    pub fn risky(request: u64, body: &mut Body) -> u64 {
        body.begin();
        std::thread::sleep(Duration::from_micros(150));
        if request % 3 == 2 {
            panic!("request {} failed", request);
        }
        body.end();
        request + 1
    }
}

// The caller's measurement of one call that returns.
fn timed<R>(truth: &mut FunctionTruth, traced: impl FnOnce(&mut Body) -> R) -> R {
    let mut body = Body::default();
    let start = Instant::now();
    let result = traced(&mut body);
    let duration_ns = start.elapsed().as_nanos() as u64;
    truth.record_return(duration_ns, &body);
    result
}

// timed() for a call that may panic: caught here, in an untraced caller, and
// counted as abandoned.
fn timed_or_abandoned<R>(
    truth: &mut FunctionTruth,
    traced: impl FnOnce(&mut Body) -> R,
) -> Option<R> {
    let mut body = Body::default();
    let start = Instant::now();
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| traced(&mut body)));
    let duration_ns = start.elapsed().as_nanos() as u64;
    match outcome {
        Ok(result) => {
            truth.record_return(duration_ns, &body);
            Some(result)
        }
        Err(_) => {
            truth.record_abandoned();
            None
        }
    }
}

fn generic_name<T>() -> String {
    format!("{}::generic::<{}>", handler::PATH, std::any::type_name::<T>())
}

fn function_name(name: &str) -> String {
    format!("{}::{}", handler::PATH, name)
}

struct Options {
    truth: Option<String>,
    wait_signal: bool,
    scenario: String,
}

fn bad_usage(message: &str) -> ! {
    eprintln!("rust-workload: {}", message);
    eprintln!("usage: rust-workload [--wait-signal] [--truth FILE] [--scenario all|abort]");
    std::process::exit(2);
}

fn parse_options() -> Options {
    let mut options = Options { truth: None, wait_signal: false, scenario: "all".to_string() };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--wait-signal" => options.wait_signal = true,
            "--truth" => {
                options.truth = Some(args.next().unwrap_or_else(|| bad_usage("--truth needs a file")))
            }
            "--scenario" => {
                options.scenario = args.next().unwrap_or_else(|| bad_usage("--scenario needs a name"))
            }
            other => bad_usage(&format!("unknown argument {:?}", other)),
        }
    }
    if options.scenario != "all" && options.scenario != "abort" {
        bad_usage(&format!("unknown scenario {:?}", options.scenario));
    }
    options
}

// SIGUSR1 through sigwait(): std has no signal API, glibc's is declared here.
#[repr(C)]
struct SigSet {
    bits: [u64; 16],
}

extern "C" {
    fn sigemptyset(set: *mut SigSet) -> i32;
    fn sigaddset(set: *mut SigSet, signal: i32) -> i32;
    fn pthread_sigmask(how: i32, set: *const SigSet, old: *mut SigSet) -> i32;
    fn sigwait(set: *const SigSet, signal: *mut i32) -> i32;
}

const SIGUSR1: i32 = 10;
const SIG_BLOCK: i32 = 0;

fn sigusr1_set() -> SigSet {
    let mut set = SigSet { bits: [0; 16] };
    unsafe {
        sigemptyset(&mut set);
        sigaddset(&mut set, SIGUSR1);
    }
    set
}

fn block_sigusr1() {
    let set = sigusr1_set();
    unsafe {
        pthread_sigmask(SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

fn wait_for_sigusr1() {
    let set = sigusr1_set();
    let mut received = 0;
    unsafe {
        sigwait(&set, &mut received);
    }
}

fn write_truth(options: &Options, scenario: &str, functions: &[&FunctionTruth]) {
    if let Some(path) = &options.truth {
        if let Err(error) = truth::write_truth(path, &[scenario], functions) {
            eprintln!("rust-workload: cannot write {}: {}", path, error);
            std::process::exit(1);
        }
    }
}

fn run_all(options: &Options) -> u64 {
    let mut process = FunctionTruth::new(function_name("process"));
    let mut generic_u64 = FunctionTruth::new(generic_name::<u64>());
    let mut generic_str = FunctionTruth::new(generic_name::<&str>());
    let mut risky = FunctionTruth::new(function_name("risky"));
    let mut sum = 0u64;
    for request in 0..200u64 {
        sum = sum.wrapping_add(timed(&mut process, |body| handler::process(request, body)));
    }
    for request in 0..150u64 {
        sum += timed(&mut generic_u64, |body| handler::generic(request, body)) as u64;
    }
    let words = ["alpha", "beta", "gamma", "delta"];
    for request in 0..100usize {
        let word: &str = words[request % words.len()];
        sum += timed(&mut generic_str, |body| handler::generic(word, body)) as u64;
    }
    std::panic::set_hook(Box::new(|_| {}));
    for request in 0..120u64 {
        if let Some(answer) = timed_or_abandoned(&mut risky, |body| handler::risky(request, body)) {
            sum = sum.wrapping_add(answer);
        }
    }
    let _ = std::panic::take_hook();
    write_truth(options, "all", &[&process, &generic_u64, &generic_str, &risky]);
    sum
}

fn run_abort(options: &Options) -> u64 {
    let mut process = FunctionTruth::new(function_name("process"));
    let mut risky = FunctionTruth::new(function_name("risky"));
    let mut sum = 0u64;
    for request in 0..50u64 {
        sum = sum.wrapping_add(timed(&mut process, |body| handler::process(request, body)));
    }
    risky.record_abandoned();
    write_truth(options, "abort", &[&process, &risky]);
    eprintln!("rust-workload: handler::risky panics now");
    let mut body = Body::default();
    sum.wrapping_add(handler::risky(2, &mut body))
}

fn main() {
    let options = parse_options();
    if options.wait_signal {
        block_sigusr1();
    }
    println!("ready pid={}", std::process::id());
    let _ = std::io::stdout().flush();
    if options.wait_signal {
        wait_for_sigusr1();
    }
    let started = Instant::now();
    let sum = if options.scenario == "abort" { run_abort(&options) } else { run_all(&options) };
    let elapsed: Duration = started.elapsed();
    println!("done in {} ms (checksum {})", elapsed.as_millis(), sum);
}
