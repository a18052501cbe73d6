//! Reads one history file (`import_file FORMAT PATH`) and prints its size:
//! the importer alone, for measuring it with `/usr/bin/time`.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(format), Some(path)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: import_file FORMAT PATH");
        std::process::exit(2);
    };
    let format = format.parse().unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    match history::formats::read(path.as_ref(), format) {
        Ok(h) => {
            let ops: usize = h.txns.iter().map(|t| t.ops.len()).sum();
            println!("{} transactions, {ops} ops", h.txns.len());
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    }
}
