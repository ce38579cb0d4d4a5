//! A cgroup of its own, in every hierarchy, for each namespace's systemd.
//!
//! systemd as PID 1 takes the cgroup it starts in as its root and puts its
//! units under it (`system.slice/local-sa.service`). The namespaces share
//! the host's cgroup file systems, so two systemds started in the same
//! cgroup would manage the same unit cgroups: `systemctl kill` in one
//! test would signal another test's processes. Each namespace therefore
//! starts in a fresh cgroup, at the same path in every hierarchy (systemd
//! uses one path for all), below the deepest cgroup this process is in
//! (so that whatever limits the test runner, such as a memory cgroup,
//! limits the namespace too). Removed, with everything systemd made
//! under it, once the namespace is gone.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The cgroup made for one namespace: its directory in each hierarchy.
#[derive(Debug)]
pub(super) struct Cgroup {
    /// Each hierarchy's directory of it, and the directories this process
    /// made to reach it, outermost first.
    dirs: Vec<(PathBuf, Vec<PathBuf>)>,
}

/// The directories on the way that this process made, with how many of
/// its cgroups lie below each: the last to go removes them.
static MADE_ON_THE_WAY: Mutex<BTreeMap<PathBuf, usize>> = Mutex::new(BTreeMap::new());

impl Cgroup {
    /// Makes a fresh cgroup in every cgroup hierarchy mounted here.
    pub(super) fn new() -> Result<Self, String> {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let leaf = format!(
            "local-sa-systemd-{}-{}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        );
        let mine = fs::read_to_string("/proc/self/cgroup").map_err(|e| e.to_string())?;
        let mountinfo = fs::read_to_string("/proc/self/mountinfo").map_err(|e| e.to_string())?;
        let base = mine
            .lines()
            .filter_map(|l| l.splitn(3, ':').nth(2))
            .max_by_key(|p| p.len())
            .unwrap_or("/")
            .trim_end_matches('/')
            .to_owned();
        let path = format!("{base}/{leaf}");
        let mut cgroup = Self { dirs: Vec::new() };
        let mut made_on_the_way = MADE_ON_THE_WAY
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for mount in hierarchies(&mountinfo) {
            let mount = Path::new(&mount);
            let dir = mount.join(path.trim_start_matches('/'));
            let mut on_the_way = Vec::new();
            let mut at = dir.parent();
            while let Some(d) = at.filter(|d| *d != mount) {
                if let Some(users) = made_on_the_way.get_mut(d) {
                    *users += 1;
                    on_the_way.push(d.to_owned());
                }
                at = d.parent();
            }
            for made in make_dirs(mount, &dir)? {
                if made != dir {
                    made_on_the_way.insert(made.clone(), 1);
                    on_the_way.push(made);
                }
            }
            on_the_way.sort();
            cgroup.dirs.push((dir, on_the_way));
        }
        Ok(cgroup)
    }

    /// The directories a process writes `0` to the `cgroup.procs` of, to
    /// move itself in.
    pub(super) fn dirs(&self) -> impl Iterator<Item = &Path> {
        self.dirs.iter().map(|(d, _)| d.as_path())
    }
}

impl Drop for Cgroup {
    /// Removes it and everything under it, once its processes are gone
    /// (waits a few seconds for them), and the directories on the way
    /// this process made once none of its cgroups is below them.
    fn drop(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut made_on_the_way = MADE_ON_THE_WAY
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for (dir, on_the_way) in &self.dirs {
            while remove_tree(dir).is_err() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            for d in on_the_way.iter().rev() {
                if let Some(users) = made_on_the_way.get_mut(d) {
                    *users -= 1;
                    if *users == 0 {
                        made_on_the_way.remove(d);
                        let _ = fs::remove_dir(d);
                    }
                }
            }
        }
    }
}

/// The mount points of the cgroup hierarchies (v1 and v2).
fn hierarchies(mountinfo: &str) -> Vec<String> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (fields, rest) = line.split_once(" - ")?;
            let fstype = rest.split_whitespace().next()?;
            let mount_point = fields.split_whitespace().nth(4)?;
            matches!(fstype, "cgroup" | "cgroup2").then(|| mount_point.to_owned())
        })
        .collect()
}

/// Makes `dir` under `mount` and the directories on the way: those it
/// made, outermost first. A cpuset hierarchy's new cgroups get their
/// parent's CPUs and memory nodes (a task cannot join one without).
fn make_dirs(mount: &Path, dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut made = Vec::new();
    let mut at = mount.to_owned();
    for part in dir.strip_prefix(mount).map_err(|e| e.to_string())? {
        let parent = at.clone();
        at.push(part);
        if at.is_dir() {
            continue;
        }
        fs::create_dir(&at).map_err(|e| format!("{}: {e}", at.display()))?;
        made.push(at.clone());
        for file in ["cpuset.cpus", "cpuset.mems"] {
            if let Ok(value) = fs::read_to_string(parent.join(file)) {
                fs::write(at.join(file), value.trim())
                    .map_err(|e| format!("{}: {e}", at.join(file).display()))?;
            }
        }
    }
    Ok(made)
}

/// Removes cgroup directory `dir` and those under it, deepest first.
fn remove_tree(dir: &Path) -> std::io::Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            remove_tree(&entry.path())?;
        }
    }
    fs::remove_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cgroup_mounts_are_found_in_mountinfo() {
        let info = "30 25 0:26 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n\
                    31 25 0:27 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n\
                    22 1 8:1 / / rw - ext4 /dev/sda1 rw\n";
        assert_eq!(
            hierarchies(info),
            ["/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified"]
        );
    }
}
