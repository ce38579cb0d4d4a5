//! The demo on a simulated fabric: a 100-host fat tree with OpenSM as the
//! master SA, local-sa serving one host, and lsaquery asking local-sa and
//! OpenSM the same questions side by side.
//!
//! Run it with `scripts/demo.sh`, which installs what it needs and builds
//! first.

use std::os::unix::fs::PermissionsExt;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use conformance::saquery::{parse_printed_records, path_record_dump};
use conformance::{LocalSa, Node, NodeProcess, RunOutput, SaDump, SimulatedFabric, Topology};
use mad_codec::{Gid, Mtu, PathRecordRepr, Rate, Selector};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("demo: {e}");
            ExitCode::FAILURE
        }
    }
}

fn section(title: &str) {
    println!("\n=== {title}");
}

/// The SM_Key the demo's local-sa takes loads with.
const DEMO_SM_KEY: &str = "0x5eed";

fn show(out: &RunOutput) {
    print!("{}{}", out.stdout, out.stderr);
}

/// What the demo says next, checked: an error naming the claim if what it
/// shows does not hold.
fn claim(holds: bool, what: impl std::fmt::Display) -> Result<(), String> {
    if holds {
        Ok(())
    } else {
        Err(format!("this does not hold: {what}"))
    }
}

struct Demo<'f> {
    node: Node<'f>,
    lsaquery: String,
    socket: String,
}

impl Demo<'_> {
    fn lsaquery(&self, args: &[&str]) -> Result<RunOutput, String> {
        self.node
            .command(&self.lsaquery)
            .args(args)
            .output()
            .map_err(|e| e.to_string())
    }

    /// lsaquery through the local API, left running.
    fn consumer(&self, args: &[&str]) -> Result<NodeProcess<'_>, String> {
        self.node
            .command(&self.lsaquery)
            .args(["--api-socket", &self.socket])
            .args(args)
            .spawn()
            .map_err(|e| e.to_string())
    }

    /// lsaquery through the local API, to completion.
    fn local(&self, args: &[&str]) -> Result<RunOutput, String> {
        let mut all = vec!["--api-socket", &self.socket];
        all.extend_from_slice(args);
        self.lsaquery(&all)
    }
}

fn run() -> Result<(), String> {
    let lsaquery = conformance::program("lsaquery")?
        .to_string_lossy()
        .into_owned();
    let topology = Topology::fat_tree(10, 10, 4);
    section(&format!(
        "A simulated fabric: {} hosts, {} switches (two-level fat tree), OpenSM on h1",
        topology.hcas().len(),
        topology.switches().len()
    ));
    let t0 = Instant::now();
    // OpenSM writes its SA database after each sweep (every second): its
    // own, uncut list of subscriptions, where a table asked through the
    // simulator shows only the records of its first MAD.
    let fabric = SimulatedFabric::builder(topology)
        .opensm_config([
            "sa_db_dump TRUE",
            "sweep_interval 1",
            &format!("sa_key {DEMO_SM_KEY}"),
        ])
        .start()
        .map_err(|e| e.to_string())?;
    println!(
        "ibsim and OpenSM up, SA answering after {:.1?}",
        t0.elapsed()
    );

    section("local-sa on h42");
    let t0 = Instant::now();
    let socket = fabric.dir().join("h42.sock").to_string_lossy().into_owned();
    // The SM_Key loads must carry, in a file only its owner reads: there is
    // no default key.
    let key_file = fabric.dir().join("sm_key");
    std::fs::write(&key_file, format!("{DEMO_SM_KEY}\n")).map_err(|e| e.to_string())?;
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| e.to_string())?;
    let key_file = key_file.to_string_lossy().into_owned();
    let mut sa = LocalSa::start(
        &fabric,
        "h42",
        &["--api-socket", &socket, "--sm-key-file", &key_file],
    )
    .map_err(|e| e.to_string())?;
    let demo = Demo {
        node: fabric.node("h42").map_err(|e| e.to_string())?,
        lsaquery,
        socket,
    };
    let me = demo.node.port().map_err(|e| e.to_string())?;
    let my_gid = Gid::new(Gid::DEFAULT_PREFIX, me.guid);
    // A path to every port of the fabric, its own included (LMC 0).
    let ports = fabric.topology().hcas().len() + fabric.topology().switches().len();
    let records = sa.counter("records");
    let dump_file = fabric.opensm_dir().join("opensm-sa.dump");
    let (dump, subscribed) = SaDump::wait_for(&dump_file, Duration::from_secs(30), |d| {
        [64, 65].iter().all(|t| d.traps_of(my_gid).contains(t))
    });
    claim(
        subscribed,
        format_args!(
            "local-sa subscribed to traps 64 and 65 at OpenSM (its database shows {:?})",
            dump.traps_of(my_gid)
        ),
    )?;
    claim(
        records == ports as u64,
        format_args!("local-sa holds a path to each of the {ports} ports, not {records}"),
    )?;
    println!(
        "registered as the SA agent on h42's port, subscribed to traps 64/65 at OpenSM and fetched this port's \
         {records} paths (one to each port of the fabric) in {:.1?}",
        t0.elapsed()
    );
    let peer = fabric
        .node("h87")
        .and_then(|n| n.port())
        .map_err(|e| e.to_string())?;
    println!(
        "h42: LID {}; h87: LID {}; OpenSM (the master SA) at LID {}",
        me.lid, peer.lid, me.sm_lid
    );
    let pair = format!("{}:{}", me.lid, peer.lid);

    section(&format!(
        "lsaquery --src-to-dst {pair} --method get        (asks local-sa, the default)"
    ));
    let (hits, misses) = (sa.counter("hits"), sa.counter("misses"));
    let ours = demo.lsaquery(&["--src-to-dst", &pair, "--method", "get"])?;
    show(&ours);
    section(&format!(
        "lsaquery --master --src-to-dst {pair} --method get   (asks OpenSM)"
    ));
    let theirs = demo.lsaquery(&["--master", "--src-to-dst", &pair, "--method", "get"])?;
    show(&theirs);
    let answered = parse_printed_records(&ours.stdout);
    claim(
        ours.status.success()
            && answered.len() == 1
            && answered == parse_printed_records(&theirs.stdout),
        "local-sa and OpenSM answer the same record",
    )?;
    // The counters file is written every second.
    let from_cache = sa.wait_until("the Get counted", Duration::from_secs(10), |c| {
        c.get("hits").is_some_and(|h| *h > hits)
    });
    claim(
        from_cache.is_ok() && sa.counter("misses") == misses,
        "local-sa answered the Get from its cache (a hit, no miss)",
    )?;
    println!("Same record, field by field, without a trip to the master.");

    section("ib_acme -f n -d h87 -v   (ibacm's own client, through local-sa's ibacm socket)");
    sa.wait_until(
        "host names from OpenSM's NodeRecords",
        Duration::from_secs(60),
        |c| c.get("names").is_some_and(|n| *n > 0),
    )
    .map_err(|e| e.to_string())?;
    let acme = std::process::Command::new("ib_acme")
        .arg("-S")
        .arg(sa.acm_socket())
        .args(["-f", "n", "-d", "h87", "-v"])
        .output()
        .map_err(|e| format!("ib_acme (package ibacm): {e}"))?;
    let printed = String::from_utf8_lossy(&acme.stdout);
    print!("{printed}");
    claim(
        acme.status.success()
            && printed.contains(&format!("dlid: {}", peer.lid))
            && printed.contains("SA verification: success"),
        "ib_acme resolved h87 through local-sa, and OpenSM's answer verified it",
    )?;
    println!(
        "The host name came from OpenSM's NodeRecords; the path from local-sa's cache;\n\"SA verification\" asked OpenSM through the same socket."
    );

    section(&format!(
        "Every path from h42: lsaquery -p --slid {}",
        me.lid
    ));
    let table = demo.lsaquery(&["-p", "--slid", &me.lid.to_string()])?;
    let local_count = parse_printed_records(&table.stdout).len();
    let master = demo.lsaquery(&["--master", "-p", "--slid", &me.lid.to_string()])?;
    let master_count = parse_printed_records(&master.stdout).len();
    claim(
        local_count == ports && master_count < local_count,
        format_args!(
            "local-sa gave all {ports} paths ({local_count}), OpenSM's answer came cut ({master_count})"
        ),
    )?;
    println!("local-sa: {local_count} PathRecords, through RMPP segment by segment.");
    println!(
        "OpenSM:   {master_count} — its multi-MAD answer arrives cut through the simulator:\n          {}",
        master.stderr.trim()
    );

    section(&format!(
        "The master computes no paths: lsaquery --compute on {} (next to the master), its SA key as --smkey",
        fabric.opensm_node()
    ));
    let beside_master = fabric
        .node(fabric.opensm_node())
        .map_err(|e| e.to_string())?;
    let computed = beside_master
        .command(&demo.lsaquery)
        .args(["--compute", "--smkey", DEMO_SM_KEY])
        .timeout(Duration::from_secs(120))
        .output()
        .map_err(|e| e.to_string())?;
    print!("{}", computed.stdout);
    if !computed.status.success() {
        return Err(format!(
            "the computed tables differ from OpenSM's: {}",
            computed.stderr
        ));
    }
    println!(
        "Every node's table from the switches' forwarding tables, ports, links and P_Keys, checked against\n\
         OpenSM's own answers for a sample of pairs; `lsaquery --distribute --compute` pushes them to every local-sa."
    );

    section(
        "A SetTable load: 3 paths of a port elsewhere, pushed over RMPP with the SM_Key, read back",
    );
    let records: String = (1..=3u16)
        .map(|d| {
            path_record_dump(
                &PathRecordRepr {
                    sgid: Gid::new(Gid::DEFAULT_PREFIX, 0x5000),
                    dgid: Gid::new(Gid::DEFAULT_PREFIX, 0x6000 + u64::from(d)),
                    slid: 3000,
                    dlid: 3000 + d,
                    reversible: true,
                    pkey: 0xFFFF,
                    mtu_selector: Selector::Exactly,
                    mtu: Mtu::MTU_2048,
                    rate_selector: Selector::Exactly,
                    rate: Rate::GBPS_10,
                    packet_life_selector: Selector::Exactly,
                    packet_life: 18,
                    ..PathRecordRepr::default()
                }
                .to_wire(),
            )
        })
        .collect();
    let file = fabric.dir().join("paths.txt");
    std::fs::write(&file, records).map_err(|e| e.to_string())?;
    let loaded = demo.lsaquery(&[
        "--load",
        &file.to_string_lossy(),
        "--replace",
        "--smkey",
        DEMO_SM_KEY,
    ])?;
    show(&loaded);
    let read_back = || -> Result<Vec<u64>, String> {
        let back = demo.lsaquery(&["-p", "--slid", "3000"])?;
        Ok(parse_printed_records(&back.stdout)
            .iter()
            .filter_map(|r| r.number("dlid"))
            .collect())
    };
    let back = demo.lsaquery(&["-p", "--slid", "3000", "--json"])?;
    show(&back);
    claim(
        loaded.status.success() && read_back()? == [3001, 3002, 3003],
        "the 3 paths loaded read back from local-sa",
    )?;
    println!("The same load with a wrong SM_Key is refused and changes nothing:");
    let refused = demo.lsaquery(&["--load", &file.to_string_lossy(), "--smkey", "2"])?;
    show(&refused);
    claim(
        !refused.status.success()
            && refused.stderr.contains("ERR_REQ_DENIED")
            && read_back()? == [3001, 3002, 3003],
        "a load with another SM_Key is refused (ERR_REQ_DENIED) and the table is as it was",
    )?;

    section(
        "Three programs subscribe to trap 65 and two join a group, through local-sa's local API \
         (a Unix socket: no umad access needed)",
    );
    let subscribers = (0..3)
        .map(|_| {
            demo.consumer(&[
                "--subscribe",
                "65",
                "--count",
                "1",
                "--duration",
                "120",
                "--json",
            ])
        })
        .collect::<Result<Vec<_>, _>>()?;
    let group = "ff12:1234::42";
    // The full member first: only a full member may create the group.
    let mut members = Vec::new();
    for (n, join_state) in [(1, "1"), (2, "2")] {
        members.push(demo.consumer(&[
            "--join",
            group,
            "--create",
            "-J",
            join_state,
            "--duration",
            "120",
        ])?);
        sa.wait_until("the member joined", Duration::from_secs(30), |c| {
            c.get("members").is_some_and(|m| *m == n)
        })
        .map_err(|e| e.to_string())?;
    }
    sa.wait_until("the consumers registered", Duration::from_secs(30), |c| {
        c.get("subscribers").is_some_and(|n| *n == 4)
    })
    .map_err(|e| {
        let said: Vec<String> = subscribers
            .iter()
            .chain(&members)
            .map(|p| p.stderr())
            .collect();
        format!("{e}\nthe consumers said:\n{}", said.join(""))
    })?;
    let gid = my_gid.to_string();
    println!("\nOpenSM's subscriptions for h42 (its SA database, opensm-sa.dump)");
    let (dump, written) = SaDump::wait_for(&dump_file, Duration::from_secs(30), |d| {
        d.traps_of(my_gid).contains(&65)
    });
    if !written {
        return Err(format!(
            "OpenSM's database shows no trap 65 subscription for h42: {:?}",
            dump.traps_of(my_gid)
        ));
    }
    for sub in dump.subscriptions.iter().filter(|s| s.subscriber == my_gid) {
        println!(
            "  trap {:<5} from {}",
            sub.trap,
            if sub.gid == Gid::default() {
                "anyone".to_owned()
            } else {
                sub.gid.to_string()
            }
        );
    }
    let trap_65 = dump.traps_of(my_gid).iter().filter(|t| **t == 65).count();
    if trap_65 != 1 {
        return Err(format!(
            "OpenSM holds {trap_65} trap 65 subscriptions for h42, not one"
        ));
    }
    println!(
        "Three consumers and local-sa itself want trap 65: OpenSM holds one subscription for it."
    );
    println!(
        "\nlsaquery --master -m --mgid {group} --gid {gid}   (OpenSM's record of h42 in the group)"
    );
    let record = demo.lsaquery(&[
        "--master",
        "-m",
        "--mgid",
        group,
        "--gid",
        &gid,
        "--smkey",
        DEMO_SM_KEY,
    ])?;
    show(&record);
    // saquery's format: the Scope and JoinState nibbles in one byte.
    let join_states: Vec<u64> = parse_printed_records(&record.stdout)
        .iter()
        .filter_map(|r| r.number("ScopeState"))
        .map(|scope_state| scope_state & 0xF)
        .collect();
    claim(
        record.status.success() && join_states == [0x3],
        format_args!("OpenSM holds one member for h42 with JoinState 0x3, not {join_states:?}"),
    )?;
    println!(
        "A full member and a non-member on h42: one member at OpenSM, JoinState 0x3 (their union)."
    );

    section("Unplugging h87 (ibsim Unlink): OpenSM reports trap 65, local-sa drops its paths");
    let peer_gid = Gid::new(Gid::DEFAULT_PREFIX, peer.guid).to_string();
    fabric.unlink("h87", 1).map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    // The subscribers each take one notice and leave: theirs is the trap
    // 65 for h87's port, delivered by local-sa from the one Report OpenSM
    // sent it, after local-sa dropped the port's paths.
    let mut notices = Vec::new();
    for mut s in subscribers {
        s.wait_timeout(Duration::from_secs(60));
        notices.push(s.stdout());
    }
    let waited = t0.elapsed();
    let about_h87 = |n: &String| {
        n.contains("\"trap_num\":65") && n.contains(&format!("\"gid\":\"{peer_gid}\""))
    };
    if !notices.iter().all(about_h87) {
        return Err(format!(
            "the subscribers did not each get h87's trap 65:\n{}",
            notices.concat()
        ));
    }
    println!(
        "h87's trap 65 reached the three subscribers {:.1?} after the unplug:",
        waited
    );
    for n in &notices {
        print!("{n}");
    }
    println!("\nlsaquery --src-to-dst {pair} --method get   (local-sa)");
    let ours = demo.lsaquery(&["--src-to-dst", &pair, "--method", "get"])?;
    show(&ours);
    println!("lsaquery --master --src-to-dst {pair} --method get   (OpenSM)");
    let theirs = demo.lsaquery(&["--master", "--src-to-dst", &pair, "--method", "get"])?;
    show(&theirs);
    let no_records =
        |out: &RunOutput| !out.status.success() && parse_printed_records(&out.stdout).is_empty();
    if !no_records(&ours) || !no_records(&theirs) {
        return Err("a path to the unplugged h87 is still answered".into());
    }
    println!("Both: no path to h87 any more.");

    section("The members go away: local-sa leaves the group at OpenSM for them");
    for m in members {
        m.stop(Duration::from_secs(10));
    }
    sa.wait_until("the members gone", Duration::from_secs(30), |c| {
        c.get("groups").is_some_and(|n| *n == 0)
    })
    .map_err(|e| e.to_string())?;
    println!("lsaquery -g   (this node's groups, through the local API)");
    let local_groups = demo.local(&["-g"])?;
    show(&local_groups);
    println!("lsaquery --master -g   (OpenSM's groups)");
    let master_groups = demo.lsaquery(&["--master", "-g"])?;
    show(&master_groups);
    let group_gid: Gid = group.parse().map_err(|e| format!("{group}: {e:?}"))?;
    let (dump, left) = SaDump::wait_for(&dump_file, Duration::from_secs(30), |d| {
        d.member_state(group_gid, my_gid).is_none()
    });
    claim(
        left && parse_printed_records(&local_groups.stdout).is_empty(),
        format_args!(
            "h42 is in no group, here or at OpenSM (OpenSM's database: {:?})",
            dump.member_state(group_gid, my_gid)
        ),
    )?;

    section("local-sa's counters (the file an operator reads)");
    for (name, value) in [
        "hits",
        "misses",
        "upstream_queries",
        "loaded",
        "denied",
        "notices",
        "subscribers",
        "joins_upstream",
        "joins_local",
        "leaves",
        "records",
        "rmpp_transfers",
    ]
    .iter()
    .map(|n| (n, sa.counter(n)))
    {
        println!("  {name:<18}{value}");
    }
    let (status, log) = sa.stop();
    claim(
        status.is_some_and(|s| s.success()),
        format_args!("local-sa stops cleanly on SIGTERM ({status:?}): {log}"),
    )?;
    println!("\nlocal-sa stopped on SIGTERM; stopping the fabric.");
    Ok(())
}
