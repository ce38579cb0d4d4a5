//! saquery parity: for every query type saquery has, `lsaquery` with the
//! same arguments on the same node prints the same text, byte for byte,
//! and exits the same way. Neither node runs local-sa, so both ask
//! OpenSM: what is compared is lsaquery's requests (masks, templates,
//! modifiers) and its printers against saquery's.
//!
//! ibsim carries only the first 224 bytes of an answer intact, so each
//! query names its record by its key (LID, port, block) and gets a table
//! of one; `transport_vs_saquery` and `relay` cover the others.

use conformance::{Node, SimulatedFabric, Topology};

/// Runs both programs with `args`; panics with both outputs unless they
/// print the same and agree on success. Returns the shared output.
fn same(node: &Node<'_>, args: &[&str]) -> String {
    same_with(node, &[], args)
}

/// As [`same`], lsaquery also given `ours` (`--master` for the queries
/// it would otherwise ask this node's local-sa). A record can change
/// between the two runs (SMInfo's ActCount counts the SM's sweeps): a
/// difference is looked at again, twice, before it fails.
fn same_with(node: &Node<'_>, ours: &[&str], args: &[&str]) -> String {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let theirs = node.saquery(args).unwrap_or_else(|e| panic!("{e}"));
        let mine = node
            .lsaquery()
            .args(ours)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        if mine.stdout != theirs.stdout && attempt < 3 {
            continue;
        }
        assert_eq!(
            mine.stdout, theirs.stdout,
            "lsaquery {args:?} (exit {}, stderr {:?}) against saquery (exit {}, stderr {:?})",
            mine.status, mine.stderr, theirs.status, theirs.stderr
        );
        assert_eq!(
            mine.status.success(),
            theirs.status.success(),
            "{args:?}: lsaquery {} ({}), saquery {} ({})",
            mine.status,
            mine.stderr,
            theirs.status,
            theirs.stderr
        );
        return mine.stdout;
    }
}

/// lsaquery's output, which must be a success.
fn ours(node: &Node<'_>, args: &[&str]) -> String {
    let out = node.lsaquery().args(args).output().unwrap();
    assert!(out.status.success(), "lsaquery {args:?}: {}", out.stderr);
    out.stdout
}

/// The value of the first `name....value` line.
fn value<'a>(text: &'a str, name: &str) -> &'a str {
    text.lines()
        .find_map(|l| {
            let rest = l.trim_start().strip_prefix(name)?;
            rest.starts_with('.').then(|| rest.trim_start_matches('.'))
        })
        .unwrap_or_else(|| panic!("no {name} in:\n{text}"))
}

#[test]
fn every_saquery_query_type_prints_as_saquery_prints_it() {
    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let node = fabric.node("h2").unwrap();
    let me = node.port().unwrap();
    let lid = me.lid.to_string();
    let sm = me.sm_lid.to_string();

    // LinkRecord from this port: its other end is the leaf switch.
    let link = same(&node, &["LR", &format!("{lid}/1")]);
    assert!(link.starts_with("LinkRecord dump:"), "{link}");
    let switch = value(&link, "ToLID").to_owned();
    let switch_port = value(&link, "ToPort").to_owned();
    assert_eq!(same(&node, &["-x", &format!("{lid}/1")]), link);
    let back = same(
        &node,
        &[
            "LR",
            &format!("{switch}/{switch_port}"),
            &format!("{lid}/1"),
        ],
    );
    assert!(back.starts_with("LinkRecord dump:"), "{back}");

    let sm_info = same(&node, &["SMIR", &sm]);
    assert!(sm_info.contains("\t\tSMInfo dump:\n"), "{sm_info}");
    assert_eq!(value(&sm_info, "SMState"), "3", "the master");

    let switch_info = same(&node, &["SWIR", &switch]);
    assert!(switch_info.contains("LinearFDBTop"), "{switch_info}");
    let lft = same(&node, &["LFTR", &format!("{switch}/0")]);
    assert!(lft.contains("\t\tLID\tPort Number\n"), "{lft}");
    // The IPoIB broadcast group OpenSM creates has an MFT block 0.
    same(&node, &["MFTR", &format!("{switch}/0/0")]);
    let guids = same(&node, &["GIR", &format!("{lid}/0")]);
    assert_eq!(
        value(&guids, "GUID 0"),
        format!("0x{:016x}", me.guid),
        "{guids}"
    );
    same(&node, &["SL2VL", &lid]);
    same(&node, &["SL2VL", &format!("{switch}/1/2")]);
    same(&node, &["VLAR", &format!("{lid}/1/1")]);
    // OpenSM gives P_Key tables to trusted requesters only: without the
    // SM_Key both fail alike, with it both print the table.
    same(&node, &["PKTR", &format!("{lid}//0")]);
    let pkeys = same(&node, &["--smkey", "1", "PKTR", &format!("{lid}//0")]);
    assert!(pkeys.contains("0xffff"), "{pkeys}");
    // The key from infiniband-diags' shared defaults instead.
    let conf = fabric.dir().join("ibdiag.conf");
    std::fs::write(
        &conf,
        "# shared defaults\nsa_key=0x1\ntimeout=2000\nMLX_EPI=false\n",
    )
    .unwrap();
    let conf = conf.to_str().unwrap();
    assert_eq!(
        same(&node, &["-z", conf, "PKTR", &format!("{lid}//0")]),
        pkeys
    );
    // "--smkey x" asks for the key on the terminal, as saquery does
    // (`script` gives lsaquery one, and types the key).
    let lsaquery = conformance::program("lsaquery").unwrap();
    // The program's path through the environment: script runs its
    // command through a shell, and the path may hold a space.
    let typed = node
        .command("sh")
        .args([
            "-c",
            &format!(
                "printf '1\\n' | script -qec '\"$LSAQUERY\" --smkey x PKTR {lid}//0' /dev/null"
            ),
        ])
        .env("LSAQUERY", &lsaquery)
        .output()
        .unwrap();
    assert!(typed.status.success(), "{}{}", typed.stdout, typed.stderr);
    assert!(
        typed.stdout.contains("SM_Key: ") && typed.stdout.contains("PKeyTableRecord dump:"),
        "the key typed at the prompt: {}{}",
        typed.stdout,
        typed.stderr
    );
    // Without a terminal to ask on, a clear refusal.
    let no_tty = node
        .command("setsid")
        .args([
            "-w".as_ref(),
            lsaquery.as_os_str(),
            "--smkey".as_ref(),
            "x".as_ref(),
            "-c".as_ref(),
        ])
        .output()
        .unwrap();
    assert_eq!(no_tty.status.code(), Some(2), "{}", no_tty.stderr);
    assert!(
        no_tty.stderr.contains("no terminal to ask on"),
        "{}",
        no_tty.stderr
    );
    // -e shows the refused request's answer.
    let refused = node
        .lsaquery()
        .args(["-e", "PKTR", &format!("{lid}//0")])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        refused.stderr.contains("answered ERR_"),
        "the status by name: {}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("answer with status 0x")
            && refused
                .stderr
                .lines()
                .any(conformance::saquery::is_hex_line),
        "{}",
        refused.stderr
    );

    let port_info = same(&node, &["PIR", &format!("{lid}/1")]);
    assert!(
        port_info.contains("\t\tLinkState:.......................Active\n"),
        "{port_info}"
    );
    assert!(port_info.contains("\t\tMkey:............................<not displayed>\n"));
    same(&node, &["-K", "PIR", &format!("{lid}/1")]);
    let sm_ports = same(&node, &["-s"]);
    assert!(
        sm_ports.starts_with("IsSM ports\nPortInfoRecord dump:"),
        "{sm_ports}"
    );
    same(&node, &["NR", &lid]);
    same(&node, &[&lid]);
    // What local-sa serves (ClassPortInfo, PathRecords, multicast and
    // subscriptions) lsaquery asks this node's local-sa for by default.
    same_with(&node, &["--master"], &["-c"]);
    same_with(&node, &["--master"], &["CPI"]);
    same_with(
        &node,
        &["--master"],
        &["--src-to-dst", &format!("{lid}:{switch}")],
    );
    same_with(&node, &["--master"], &["PR", "--slid", &lid, "--dlid", &sm]);
    same_with(&node, &["--master"], &["-g"]);
    same_with(&node, &["--master"], &["MCMR", "--mlid", "0xc000"]);
    same_with(&node, &["--master"], &["IIR"]);
}

#[test]
fn node_names_stand_for_their_lids() {
    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let node = fabric.node("h2").unwrap();
    let far = fabric.node("h9").unwrap().port().unwrap();
    // saquery looks a name up in the whole NodeRecord table, which ibsim
    // cuts; lsaquery asks for the one NodeDescription, so compare with
    // saquery given the LID.
    for (ours, theirs) in [
        (vec!["NR", "h9"], vec!["NR".to_owned(), far.lid.to_string()]),
        (vec!["h9"], vec!["NR".to_owned(), far.lid.to_string()]),
        (
            vec!["PIR", "h9/1"],
            vec!["PIR".to_owned(), format!("{}/1", far.lid)],
        ),
        (
            vec!["-x", "h9/1"],
            vec!["-x".to_owned(), format!("{}/1", far.lid)],
        ),
    ] {
        let out = node.lsaquery().args(&ours).output().unwrap();
        let want = node.saquery(&theirs).unwrap();
        assert!(out.status.success(), "{ours:?}: {}", out.stderr);
        assert!(!want.stdout.is_empty(), "{theirs:?}: {}", want.stderr);
        assert_eq!(
            out.stdout, want.stdout,
            "{ours:?} against saquery {theirs:?}"
        );
    }
    let me = node.port().unwrap();
    let out = node
        .lsaquery()
        .args(["--master", "--src-to-dst", &format!("h2:{}", far.lid)])
        .output()
        .unwrap();
    let want = node
        .saquery(["--src-to-dst", &format!("{}:{}", me.lid, far.lid)])
        .unwrap();
    assert_eq!(out.stdout, want.stdout, "{}", out.stderr);

    let missing = node.lsaquery().args(["NR", "nosuchnode"]).output().unwrap();
    assert_eq!(missing.status.code(), Some(1), "{}", missing.stderr);
    assert!(
        missing.stderr.contains("no node is named \"nosuchnode\""),
        "{}",
        missing.stderr
    );
}

#[test]
fn local_sa_passes_on_the_records_it_does_not_keep() {
    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let _sa = conformance::LocalSa::start(&fabric, "h3", &[]).unwrap_or_else(|e| panic!("{e}"));
    let node = fabric.node("h3").unwrap();
    let me = node.port().unwrap();
    let lid = me.lid.to_string();
    let link = same(&node, &["-x", &format!("{lid}/1")]);
    let switch = value(&link, "ToLID").to_owned();
    // Asked of local-sa by MAD, as any SA client on the fabric may: it
    // relays each to the master and the master's answer back.
    for args in [
        vec!["LFTR".to_owned(), format!("{switch}/0")],
        vec!["PIR".to_owned(), format!("{lid}/1")],
        vec!["SMIR".to_owned(), me.sm_lid.to_string()],
        vec!["GIR".to_owned(), format!("{lid}/0")],
    ] {
        let theirs = node.saquery(&args).unwrap();
        let through = node
            .lsaquery()
            .args(["--sa-lid", &lid])
            .args(&args)
            .output()
            .unwrap();
        assert!(through.status.success(), "{args:?}: {}", through.stderr);
        assert!(!theirs.stdout.is_empty(), "{args:?}: {}", theirs.stderr);
        assert_eq!(through.stdout, theirs.stdout, "{args:?} through local-sa");
    }
}

#[test]
fn listings_names_and_registrations_print_as_saquery_prints_them() {
    let fabric = SimulatedFabric::builder(Topology::fat_tree(3, 4, 2))
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let node = fabric.node("h4").unwrap();
    let far = fabric.node("h9").unwrap().port().unwrap();
    let far_lid = far.lid.to_string();
    let far_guid = format!("{:#x}", far.guid);

    // A subscription and a group with a member at OpenSM, for IIR, -I,
    // -m and MCMR to show.
    let subscriber = fabric.node("h5").unwrap();
    let mut sub = subscriber
        .lsaquery()
        .args(["--master", "--subscribe", "64", "--duration", "60"])
        .serve_requests()
        .spawn()
        .unwrap();
    let joined = subscriber
        .lsaquery()
        .args(["--master", "--join", "::"])
        .output()
        .unwrap();
    assert!(joined.status.success(), "{}", joined.stderr);
    assert!(
        conformance::eventually(std::time::Duration::from_secs(10), || {
            node.saquery(["-I"])
                .unwrap()
                .stdout
                .contains("InformInfoRecord dump")
        }),
        "{}",
        sub.stderr()
    );
    let iir = same_with(&node, &["--master"], &["-I"]);
    assert!(
        iir.contains("\t\tRID\n") && iir.contains("\t\tInformInfo dump:\n"),
        "{iir}"
    );
    same_with(&node, &["--master"], &["IIR"]);
    same_with(&node, &["--master"], &["-g"]);
    let members = same_with(&node, &["--master"], &["-m"]);
    assert!(members.contains("MCMemberRecord member dump:"), "{members}");
    same_with(&node, &["--master"], &["-m", "0xc000"]);
    same_with(&node, &["--master"], &["MCMR"]);
    same_with(&node, &["--master"], &["MCMR", "-X", "0", "-J", "1"]);
    // saquery has no -Y (P_Key index); lsaquery's default index is 0.
    let sm = node.port().unwrap().sm_lid.to_string();
    assert!(ours(&node, &["-Y", "0", "SMIR", &sm]).starts_with("SMInfoRecord dump:"));
    let _ = sub.try_wait();

    // Node listings. ibsim passes the first NodeRecord of a whole table
    // intact, so the listings that take every record are compared as
    // they come. -O and -U ask the SA for their node by LID or GUID
    // (saquery takes the whole table, and under ibsim finds only that
    // first node).
    same(&node, &["-D"]);
    same(&node, &["-N"]);
    assert_eq!(ours(&node, &["-O", &far_lid]), "h9\n");
    assert_eq!(ours(&node, &["-U", &far_guid]), "h9\n");
    same(&node, &["-L", "h1"]);
    same(&node, &["-l", "h1"]);
    same(&node, &["-G", "h1"]);

    // A node-name map renames nodes in every listing and record.
    let map = fabric.dir().join("node-name-map");
    let far_record = same(&node, &["NR", &far_lid]);
    let node_guid = value(&far_record, "node_guid");
    std::fs::write(&map, format!("# test map\n{node_guid} \"far-host\"\n")).unwrap();
    let map = map.to_str().unwrap();
    assert_eq!(
        ours(&node, &["--node-name-map", map, "-O", &far_lid]),
        "far-host\n"
    );
    let record = same(&node, &["--node-name-map", map, "NR", &far_lid]);
    assert!(
        record.contains("NodeDescription.........far-host\n"),
        "{record}"
    );
}
