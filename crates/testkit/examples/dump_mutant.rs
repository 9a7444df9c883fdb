//! Prints chain mutant N of seed S (`cargo run -p ferrofx-testkit --example dump_mutant S N`),
//! to reproduce a fuzzing failure.
fn main() {
    let args: Vec<u64> = std::env::args().skip(1).map(|a| a.parse().expect("seed and index")).collect();
    println!("{}", ferrofx_testkit::mutate::chain_mutant(args[0], args[1]));
}
