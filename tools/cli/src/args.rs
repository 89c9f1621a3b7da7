//! The paid commands' arguments (`edit`, `repair`, and `quote`'s options): parsed by the
//! command line in `main`, read by the commands.

use std::path::PathBuf;

use clap::Args;

use crate::choices::{Strength, Style, Target};

/// What to edit and how (the fields of the API's edit request).
#[derive(Args, Debug, Clone)]
pub struct EditOptions {
    /// The medium (`atelier styles` describes each).
    #[arg(long, value_enum)]
    pub style: Style,
    /// Which part of the photo is redrawn (brush needs --mask).
    #[arg(long, value_enum)]
    pub target: Target,
    /// A PNG mask the size of the photo (required for --target brush).
    #[arg(long)]
    pub mask: Option<PathBuf>,
    /// Which pet or person is meant, e.g. "the grey cat on the left".
    #[arg(long)]
    pub describe: Option<String>,
    /// How far the medium goes [default: balanced].
    #[arg(long, value_enum)]
    pub strength: Option<Strength>,
    /// An image whose medium is borrowed (+1 credit).
    #[arg(long)]
    pub style_ref: Option<PathBuf>,
    /// A refinement of the medium, e.g. "in pastel wool".
    #[arg(long)]
    pub custom_style: Option<String>,
    /// Something to keep unchanged (up to 3).
    #[arg(long)]
    pub lock: Vec<String>,
}

#[derive(Args, Debug)]
pub struct EditArgs {
    /// The photo (PNG, JPEG or WebP).
    pub photo: PathBuf,
    #[command(flatten)]
    pub options: EditOptions,
    /// Where to save the result [default: PHOTO-STYLE.png next to the photo]; a `.jpg` name
    /// saves the JPEG rendition a phone gets, any other the lossless PNG master.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Submit and return; rerunning the same command later waits and downloads.
    #[arg(long)]
    pub no_wait: bool,
    /// Submit a new, separately charged edit even if the same command was interrupted.
    #[arg(long)]
    pub new: bool,
    /// Stop waiting after this many seconds (the job carries on).
    #[arg(long, default_value_t = 900)]
    pub timeout: u64,
    /// Only show the area that would be redrawn (free, 10 a day; not with brush): the same
    /// command without it then draws that area.
    #[arg(long)]
    pub preview: bool,
}

#[derive(Args, Debug)]
pub struct RepairArgs {
    /// The job to repair.
    pub job: String,
    /// What to fix, in words.
    pub instruction: String,
    /// Where to save the result [default: REPAIR_JOB_ID.png].
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[arg(long)]
    pub no_wait: bool,
    #[arg(long)]
    pub new: bool,
    #[arg(long, default_value_t = 900)]
    pub timeout: u64,
}
