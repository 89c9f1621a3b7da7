//! The bench's command line: how many jobs, samples and runs each measurement takes.

use anyhow::{Context, Result, bail};

pub struct Args {
    /// Jobs for the throughput run.
    pub jobs: usize,
    /// Concurrent consumers in the throughput run.
    pub workers: usize,
    /// Submits (and bare transactions) for the latency figures.
    pub samples: usize,
    /// Jobs whose calls are counted.
    pub counted: usize,
    /// Cold starts per function.
    pub init_runs: usize,
    /// Interleaved runs of the 12 MP path and its codec floor.
    pub image_runs: usize,
}

pub fn args() -> Result<Args> {
    let mut a = Args {
        jobs: 100,
        workers: 4,
        samples: 60,
        counted: 10,
        init_runs: 5,
        image_runs: 3,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut it = argv.iter();
    while let Some(flag) = it.next() {
        let value: usize = it
            .next()
            .with_context(|| format!("{flag} needs a value"))?
            .parse()
            .with_context(|| format!("{flag} takes a number"))?;
        match flag.as_str() {
            "--jobs" => a.jobs = value,
            "--workers" => a.workers = value,
            "--samples" => a.samples = value,
            "--counted" => a.counted = value,
            "--init-runs" => a.init_runs = value,
            "--image-runs" => a.image_runs = value,
            _ => bail!(
                "usage: atelier-bench [--jobs N] [--workers K] [--samples N] [--counted N] [--init-runs N] [--image-runs N]"
            ),
        }
    }
    Ok(a)
}
