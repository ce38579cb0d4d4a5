//! lsaquery's command line: saquery's options, plus where to send.

use clap::{ArgGroup, Parser, ValueEnum};
use local_sa_cli::number;
use mad_codec::Gid;
use mad_codec::address::MAX_UNICAST_LID;

use local_sa_distributor::shard::Shard;

/// The headings `--help` lists the options under, by task.
const QUERIES: &str = "Queries (saquery's)";
const FIELDS: &str = "Record fields the queries select by";
const SENDING: &str = "Where and how to ask";
const REGISTRATIONS: &str = "Registrations: notices and multicast";
const LOADS: &str = "Loads into a local-sa";
const LOCAL: &str = "This node's local-sa: status, cache, warming, resolving";
const VERIFYING: &str = "Verifying local-sa against the master";
const DISTRIBUTING: &str = "Distributing: filling every node (next to the master)";
const COMPUTING: &str = "Computing the tables, and the watch";
const BENCH: &str = "Benchmarking";

/// Query an InfiniBand Subnet Administrator: a local-sa or the master SA.
///
/// lsaquery speaks saquery's options and prints saquery's text, so scripts
/// written for one work with the other (saquery's long spellings of the
/// one-letter queries, `--p`, `--x`, `--N`, ..., included); --json prints
/// one JSON object per record instead.
#[derive(Debug, Parser)]
#[command(
    name = "lsaquery",
    version,
    group(ArgGroup::new("cache_control").multiple(false)),
    group(ArgGroup::new("windowed").args(["bench", "distribute", "warm", "verify"]).multiple(true)),
    group(ArgGroup::new("acm_user").args(["resolve", "warm", "verify"]).multiple(false)),
    group(ArgGroup::new("service_id_user").args(["warm", "verify", "distribute", "compute"]).multiple(true)),
    group(ArgGroup::new("loading").args(["load", "delete", "delete_matching"]).multiple(true)),
    group(ArgGroup::new("fabric_wide").args(["distribute", "compute"]).multiple(true)),
    after_help = "\
QUERIES: CPI NR PIR SL2VL PKTR VLAR IIR LR SR PR MCMR LFTR MFTR GIR SWIR SMIR
  (saquery's names; --help gives each one's arguments)

  lsaquery --src-to-dst 4:1        the path from LID 4 to LID 1, from local-sa
  lsaquery --master -p --dlid 1    the paths to LID 1, from the master SA
  lsaquery --status                how local-sa is doing on this node
  lsaquery --verify                local-sa against the master, read-only

The common options; --help lists every option under the same headings,
with each query's arguments, loads, distributing, examples, files and
exit status. Manual: lsaquery(8).",
    after_long_help = "\
QUERIES (saquery names and aliases; LID may be a node name):
  ClassPortInfo (CPI)        what the SA supports           (also -c)
  NodeRecord (NR) [lid]      nodes, or the node at a LID    (default, also -N)
  PortInfoRecord (PIR) [[lid]/[port]/[options]]
  SL2VLTableRecord (SL2VL) [[lid]/[in_port]/[out_port]]
  PKeyTableRecord (PKTR) [[lid]/[port]/[block]]   (OpenSM: needs --smkey)
  VLArbitrationTableRecord (VLAR) [[lid]/[port]/[block]]
  InformInfoRecord (IIR) [subscriber-gid]  subscriptions    (also -I)
  LinkRecord (LR) [[from_lid]/[from_port]] [[to_lid]/[to_port]]   (also -x)
  ServiceRecord (SR)         registered services            (also -S)
  PathRecord (PR)            paths selected by the options  (also -p, --src-to-dst,
                                                             --sgid-to-dgid)
  MCMemberRecord (MCMR)      multicast member records       (also -m)
  LFTRecord (LFTR) [[lid]/[block]]
  MFTRecord (MFTR) [[mlid]/[position]/[block]]
  GUIDInfoRecord (GIR) [[lid]/[block]]
  SwitchInfoRecord (SWIR) [lid]
  SMInfoRecord (SMIR) [lid]
  -g                         multicast groups
  -s                         ports with IsSM, then with IsSMdisabled

WHICH SA:
  By default queries go to this node's own LID: the local-sa serving this
  port; those for records local-sa does not keep (every query but CPI, PR,
  MCMR and IIR) go to the port's SM LID, as saquery sends them. --master
  sends every query to the SM LID (the master SA); --sa-lid LID to any SA.

REGISTRATIONS:
  Through local-sa's local API socket by default (no umad access needed):
  --subscribe TRAP           prints each notice until --count, --duration
                             or Ctrl-C, then unsubscribes
  --join MGID                holds the membership the same way, then leaves
  -I, -g, -m                 this node's subscriptions, groups, memberships
  With --sa-lid LID or --master they go as MADs to that SA instead, where
  --leave MGID sends the Delete for a membership joined that way.

LOADS (local-sa's PathRecord Set/Delete; docs/wire-contract.md):
  --load FILE [--replace]    push a PathRecord text dump (Set over RMPP)
  --delete FILE              delete the records of a dump
  --partitions               ... of partition tables (each record to the
                             table of its P_Key), as --dump --pkey prints
  --delete-matching ...      delete what the PathRecord options select

DISTRIBUTING (run next to the master SA; docs/distributor.md):
  --distribute --smkey K     find every port running local-sa (an SA
                             ClassPortInfo probe), get each one's table from
                             the master and load it (Set, REPLACE_SOURCES),
                             --window nodes at a time; the names tables
                             (NodeRecords, directory) go with it, fetched
                             once, and each node's partition tables before
                             its default one (if --smkey is also the
                             master's SA key, which P_Key tables need)
  --targets LIDS             only these ports (e.g. 4,7,20-40)
  --from FILE                records from a dump instead of the master (a
                             snapshot carries the partition tables too)
  --snapshot FILE            write what the nodes now hold (default and
                             partition tables, in sections)
  --delta FILE               after a reroute: send only what changed since
                             that snapshot (Set the changed, Delete the gone),
                             for every default and partition table
  --compute                  compute the tables from the fabric's description
                             (forwarding tables, ports, links, P_Keys: read
                             once) instead of asking the master for N tables
                             of N paths; a sample checked against the master
                             first (--check-sample N|all); tables it does not
                             prove come from the master, and the summary says
                             so with what it cost (docs/path-engine.md)
  --compute --no-fallback    ... or exit (status 5) instead of taking them
                             from the master
  --compute --opensm-config /etc/opensm/opensm.conf
                             what the master does not publish (partitions'
                             SLs, the QoS policy's levels), from OpenSM's
                             own files
  --shard I/K                this distributor's share of K (run K at once on
                             K nodes: each fills 1/K of the nodes)
  --compute --watch          stay: on a link or port notice (through this
                             node's local-sa) and every --watch-interval,
                             re-read the description, recompute, check the
                             changed pairs and push each node only what
                             changed, under a --lease that stops the nodes'
                             own refreshes (docs/distributor.md)

COMPUTING (read-only, next to the master; docs/path-engine.md):
  --compute --smkey K        read the description, compute every node's
                             tables, check --check-sample pairs against the
                             master and report what differs and why;
                             --snapshot FILE writes the computed tables

Numbers are decimal or 0x-prefixed hex. -M, -R and --pkt_lifetime take the
whole byte as saquery does: selector in bits 7..6 (0 >, 1 <, 2 =, 3 best),
value in bits 5..0; e.g. -M 0x84 is \"MTU exactly 2048\".

EXAMPLES:
  lsaquery -c                            the SA's ClassPortInfo
  lsaquery --src-to-dst 4:1              the path from LID 4 to LID 1
  lsaquery -p --slid 4 -n 1 --json       one path from LID 4, as JSON
  lsaquery NR 1 --method get             NodeRecord Get for LID 1
  lsaquery PIR node17/1                  PortInfo of node17's port 1 (from the master)
  lsaquery LFTR 3/0 --json               block 0 of the switch at LID 3's forwarding table
  lsaquery -O 12; lsaquery -L node17     the name at LID 12; node17's LIDs
  lsaquery --master -p --dlid 1          ask the master SA instead
  lsaquery --sa-lid 7 -p --dlid 1        ask the SA at LID 7
  lsaquery --master -p > paths.txt       dump the master's paths, then
  lsaquery --load paths.txt --smkey 1      load them into local-sa
  lsaquery --delete-matching --dlid 9 --smkey 1
  lsaquery --distribute --smkey 1 --snapshot paths.snap
                                         fill every local-sa from the master
  lsaquery --distribute --smkey 1 --delta paths.snap --snapshot paths.snap
                                         ... and after a reroute, the changes
  lsaquery --distribute --compute --smkey 1 --shard 2/4
                                         a quarter of the nodes, their tables
                                         computed (the master computes none)
  lsaquery --distribute --compute --watch --smkey 1
                                         fill, then keep every node current
                                         (the nodes stop refreshing)
  lsaquery --compute --check-sample all --smkey 1
                                         would computed tables equal the
                                         master's? every pair, read-only
  lsaquery --src-to-dst 4:1 --method get --bench 100000 --window 32
  lsaquery --subscribe 65 --count 1      wait for one GID-out-of-service notice
  lsaquery --join :: --create -J 1       create a group (SA-assigned MGID) and
                                         hold it until Ctrl-C
  lsaquery --master --join ff12:... -J 2 join by MAD at the master

STATUS (anyone, through the local API):
  lsaquery --status [--json]             each port's local-sa: master, paths and
                                         their age, consumers, last warnings

CACHE CONTROL (root or local-sa's own user, through the local API):
  lsaquery --refresh [-P N]              re-fetch port N's paths from the master now
  lsaquery --flush                       drop the cache; queries go to the master
  lsaquery --dump [--json] > cache.txt   every cached PathRecord, page by page
                                         (text that --load reads back)
  lsaquery --dump --pkey 0x8001          partition 0x8001's table (--load
                                         --partitions reads it back)

WARMING (before a job, anyone, through the local API):
  lsaquery --warm node1,node2,node3      the paths to those hosts on every
                                         P_Key of the port, into local-sa
  lsaquery --warm hosts.txt --service-id 0x1060000-0x1060003
                                         ... and with rdma_cm's ServiceIDs
                                         (QoS fabrics: the QoS cache)

VERIFYING (read-only, on a live fabric; needs the umad device):
  lsaquery --verify                      local-sa against the master: 200
                                         destinations × every P_Key, with and
                                         without a ServiceID; the ibacm socket;
                                         registrations; health. OK/DIFFERENT/
                                         NOT CHECKED per part, and what to run next
  lsaquery --verify --sample all --query-rate 50 --json
                                         every destination, gently, for a script

RESOLVING (the ibacm protocol, through local-sa's ibacm socket):
  lsaquery --resolve node17              path set to a host by name
  lsaquery --resolve 10.0.0.9 --json     ... by IP address, as JSON
  lsaquery --resolve 9 --source 4        ... by LID, from the port at LID 4
  lsaquery --resolve fe80::2:c903:0:1 --cached-only

FILES:
  /run/local-sa/<ca>-<port>.sock   local-sa's local API (registrations,
                                   cache control)
  /run/ibacm-unix.sock             the ibacm protocol (--resolve)
  /dev/infiniband/umad*            the port's MAD device (queries, loads)

EXIT STATUS:
  0 answered; 1 the SA answered with an error status; 2 bad usage;
  3 no usable port or device; 4 no answer (time-out, or nobody serves
  the SA class at that LID). --verify: 0 everything checked is equal;
  1 something differs; 5 the paths could not be checked. --compute:
  0 every sampled record equals the master's; 1 one differs; 5 the
  fabric's description does not hold together. --no-fallback: 5 the
  tables could not be computed, or proven, and none was sent."
)]
pub(crate) struct Cli {
    /// Query name (see QUERIES below), or a node's LID or name for its
    /// NodeRecord.
    pub(crate) query: Option<String>,
    /// The query's argument: LID[/N[/N]] (a LID or node name, then the
    /// numbers the query takes), a GID for InformInfoRecord.
    pub(crate) arg: Option<String>,
    /// LinkRecord's second argument: TO_LID[/TO_PORT].
    pub(crate) arg2: Option<String>,

    /// Get PathRecords.
    #[arg(short = 'p', alias = "p", help_heading = QUERIES)]
    pub(crate) path_records: bool,
    /// Get the NodeRecords of the nodes named by the argument (every
    /// node's without one).
    #[arg(short = 'N', alias = "N", help_heading = QUERIES, hide_short_help = true)]
    pub(crate) node_records: bool,
    /// Get the SA's ClassPortInfo.
    #[arg(short = 'c', alias = "c", help_heading = QUERIES)]
    pub(crate) class_port_info: bool,
    /// Get multicast groups.
    #[arg(short = 'g', alias = "g", help_heading = QUERIES, hide_short_help = true)]
    pub(crate) groups: bool,
    /// Get multicast memberships, each with its node's name (an MLID
    /// argument: that group's members' port GIDs).
    #[arg(short = 'm', alias = "m", help_heading = QUERIES, hide_short_help = true)]
    pub(crate) members: bool,
    /// Get ServiceRecords.
    #[arg(short = 'S', alias = "S", help_heading = QUERIES, hide_short_help = true)]
    pub(crate) service_records: bool,
    /// Get InformInfoRecords (subscriptions).
    #[arg(short = 'I', alias = "I", help_heading = QUERIES, hide_short_help = true)]
    pub(crate) inform_info_records: bool,
    /// List each adapter's LID and node name (NodeDescription, or the
    /// node-name map's).
    #[arg(short = 'D', long = "list", help_heading = QUERIES, hide_short_help = true)]
    pub(crate) list: bool,
    /// Print the LIDs of the nodes named by the argument.
    #[arg(short = 'L', alias = "L", help_heading = QUERIES, hide_short_help = true)]
    pub(crate) lids: bool,
    /// Print the LID of the first node named by the argument.
    #[arg(short = 'l', alias = "l", help_heading = QUERIES, hide_short_help = true)]
    pub(crate) unique_lid: bool,
    /// Print the port GUIDs of the nodes named by the argument.
    #[arg(short = 'G', alias = "G", help_heading = QUERIES, hide_short_help = true)]
    pub(crate) guids: bool,
    /// Print the name of the node at the LID given as argument.
    #[arg(short = 'O', alias = "O", help_heading = QUERIES, hide_short_help = true)]
    pub(crate) name_of_lid: bool,
    /// Print the name of the node with the port GUID given as argument.
    #[arg(short = 'U', alias = "U", help_heading = QUERIES, hide_short_help = true)]
    pub(crate) name_of_guid: bool,
    /// Node GUID to name map, as infiniband-diags reads it (default
    /// /etc/rdma/ib-node-name-map if it exists).
    #[arg(long = "node-name-map", value_name = "FILE", help_heading = QUERIES, hide_short_help = true)]
    pub(crate) node_name_map: Option<std::path::PathBuf>,
    /// Get LinkRecords.
    #[arg(short = 'x', alias = "x", help_heading = QUERIES, hide_short_help = true)]
    pub(crate) link_records: bool,
    /// List the ports whose PortInfo CapabilityMask has IsSM, then those
    /// with IsSMdisabled.
    #[arg(short = 's', alias = "s", help_heading = QUERIES, hide_short_help = true)]
    pub(crate) sm_ports: bool,
    /// PathRecord from LID SRC to LID DST (NumbPath 127).
    #[arg(long = "src-to-dst", value_name = "SRC:DST", help_heading = QUERIES)]
    pub(crate) src_to_dst: Option<String>,
    /// PathRecord from SGID to DGID, IPv6 notation (NumbPath 127).
    #[arg(long = "sgid-to-dgid", value_name = "SGID-DGID", help_heading = QUERIES, hide_short_help = true)]
    pub(crate) sgid_to_dgid: Option<String>,

    /// Source LID.
    #[arg(long, value_parser = number::<u16>, help_heading = FIELDS)]
    pub(crate) slid: Option<u16>,
    /// Destination LID.
    #[arg(long, value_parser = number::<u16>, help_heading = FIELDS)]
    pub(crate) dlid: Option<u16>,
    /// Source GID.
    #[arg(long, help_heading = FIELDS, hide_short_help = true)]
    pub(crate) sgid: Option<Gid>,
    /// Destination GID.
    #[arg(long, help_heading = FIELDS, hide_short_help = true)]
    pub(crate) dgid: Option<Gid>,
    /// Multicast LID (MCMemberRecord).
    #[arg(long, value_parser = number::<u16>, help_heading = FIELDS, hide_short_help = true)]
    pub(crate) mlid: Option<u16>,
    /// Port GID (MCMemberRecord).
    #[arg(long, help_heading = FIELDS, hide_short_help = true)]
    pub(crate) gid: Option<Gid>,
    /// Multicast GID (MCMemberRecord).
    #[arg(long, help_heading = FIELDS, hide_short_help = true)]
    pub(crate) mgid: Option<Gid>,
    /// Reversible (PathRecord): 1 = only reversible paths.
    #[arg(short = 'r', long, value_parser = number::<u8>, help_heading = FIELDS, hide_short_help = true)]
    pub(crate) reversible: Option<u8>,
    /// NumbPath (PathRecord): at most this many paths per pair.
    #[arg(short = 'n', long = "numb_path", value_parser = number::<u8>, help_heading = FIELDS, hide_short_help = true)]
    pub(crate) numb_path: Option<u8>,
    /// P_Key ("x": asked for on the terminal, without echo).
    #[arg(long, value_parser = crate::key_prompt::pkey, help_heading = FIELDS)]
    pub(crate) pkey: Option<u16>,
    /// QoS class (PathRecord).
    #[arg(short = 'Q', long = "qos_class", value_parser = number::<u16>, help_heading = FIELDS, hide_short_help = true)]
    pub(crate) qos_class: Option<u16>,
    /// Service level.
    #[arg(long, value_parser = number::<u8>, help_heading = FIELDS, hide_short_help = true)]
    pub(crate) sl: Option<u8>,
    /// MTU byte: selector (bits 7..6) and MTU code.
    #[arg(short = 'M', long, value_parser = number::<u8>, help_heading = FIELDS, hide_short_help = true)]
    pub(crate) mtu: Option<u8>,
    /// Rate byte: selector (bits 7..6) and rate code.
    #[arg(short = 'R', long, value_parser = number::<u8>, help_heading = FIELDS, hide_short_help = true)]
    pub(crate) rate: Option<u8>,
    /// PacketLifeTime byte: selector (bits 7..6) and value.
    #[arg(long = "pkt_lifetime", value_parser = number::<u8>, help_heading = FIELDS, hide_short_help = true)]
    pub(crate) pkt_lifetime: Option<u8>,
    /// Q_Key (MCMemberRecord; "x": asked for on the terminal, without
    /// echo).
    #[arg(short = 'q', long, value_parser = crate::key_prompt::qkey, help_heading = FIELDS, hide_short_help = true)]
    pub(crate) qkey: Option<u32>,
    /// Traffic class.
    #[arg(short = 'T', long, value_parser = number::<u8>, help_heading = FIELDS, hide_short_help = true)]
    pub(crate) tclass: Option<u8>,
    /// Flow label.
    #[arg(short = 'F', long = "flow_label", value_parser = number::<u32>, help_heading = FIELDS, hide_short_help = true)]
    pub(crate) flow_label: Option<u32>,
    /// Hop limit.
    #[arg(short = 'H', long = "hop_limit", value_parser = number::<u8>, help_heading = FIELDS, hide_short_help = true)]
    pub(crate) hop_limit: Option<u8>,
    /// Scope (MCMemberRecord).
    #[arg(long, value_parser = number::<u8>, help_heading = FIELDS, hide_short_help = true)]
    pub(crate) scope: Option<u8>,
    /// JoinState (MCMemberRecord).
    #[arg(short = 'J', long = "join_state", value_parser = number::<u8>, help_heading = FIELDS, hide_short_help = true)]
    pub(crate) join_state: Option<u8>,
    /// ProxyJoin (MCMemberRecord), 0 or 1.
    #[arg(short = 'X', long = "proxy_join", value_parser = number::<u8>, help_heading = FIELDS, hide_short_help = true)]
    pub(crate) proxy_join: Option<u8>,
    /// ServiceID (PathRecord).
    #[arg(long = "service_id", value_parser = number::<u64>, help_heading = FIELDS, hide_short_help = true)]
    pub(crate) service_id: Option<u64>,
    /// Send this component mask instead of the one the options imply (to
    /// probe how an SA handles incomplete or odd masks).
    #[arg(long = "comp-mask", value_parser = number::<u64>, value_name = "MASK", help_heading = FIELDS, hide_short_help = true)]
    pub(crate) comp_mask: Option<u64>,

    /// P_Key index the MADs go with (default 0, the default P_Key; as
    /// infiniband-diags' other tools take it, saquery has no -Y).
    #[arg(short = 'Y', long = "pkey-idx", value_parser = number::<u16>, value_name = "IDX", help_heading = SENDING, hide_short_help = true)]
    pub(crate) pkey_index: Option<u16>,
    /// Send to the SA at this LID (default: this node's local-sa).
    ///
    /// Default: this node's own LID (its local-sa) for queries, loads, deletes and --bench; local-sa's local
    /// API for --subscribe, --join and -I/-g/-m.
    #[arg(long = "sa-lid", value_parser = number::<u16>, value_name = "LID", conflicts_with = "master", help_heading = SENDING)]
    pub(crate) sa_lid: Option<u16>,
    /// Send to the port's SM LID: the master SA.
    #[arg(long, help_heading = SENDING)]
    pub(crate) master: bool,
    /// local-sa's local API socket, for subscriptions, joins, listing
    /// registrations and --watch's notices (default
    /// `/run/local-sa/<ca>-<port>.sock`).
    #[arg(long = "api-socket", value_name = "PATH", help_heading = SENDING, hide_short_help = true)]
    pub(crate) api_socket: Option<std::path::PathBuf>,
    /// SA method: gettable (the default) or get.
    ///
    /// gettable asks for every match, as saquery does; get for exactly
    /// one, else the SA answers an error status. ClassPortInfo always uses
    /// get.
    #[arg(long, value_enum, help_heading = SENDING)]
    pub(crate) method: Option<MethodArg>,
    /// Print one JSON object per record instead of saquery's text.
    ///
    /// docs/json.md: snake_case keys, 64-bit values as "0x…" strings;
    /// --load reads PathRecords back.
    #[arg(long, help_heading = SENDING)]
    pub(crate) json: bool,
    /// Channel adapter to use (default: the first with an active port).
    #[arg(short = 'C', long, visible_alias = "Ca", help_heading = SENDING)]
    pub(crate) ca: Option<String>,
    /// Port number on the adapter.
    #[arg(short = 'P', long, visible_alias = "Port", help_heading = SENDING)]
    pub(crate) port: Option<u8>,
    /// SM_Key to send: loads, P_Key tables, --distribute.
    ///
    /// 0 is an untrusted query. "x" (any value not starting with a hex digit) asks for it on the terminal,
    /// without echo, keeping it out of `ps` and the shell's history.
    #[arg(long, value_parser = crate::key_prompt::sm_key, default_value = "0", help_heading = SENDING)]
    pub(crate) smkey: u64,
    /// Show ServiceKey, InformInfo QPN and PortInfo M_Key instead of hiding
    /// them.
    #[arg(short = 'K', long = "show-keys", visible_alias = "show_keys", help_heading = SENDING, hide_short_help = true)]
    pub(crate) show_keys: bool,
    /// Milliseconds to wait for an answer, per attempt.
    #[arg(
        short = 't',
        long = "timeout",
        value_name = "MS",
        default_value_t = 1000,
        help_heading = SENDING,
        hide_short_help = true,
    )]
    pub(crate) timeout_ms: u64,
    /// Attempts after the first.
    #[arg(long, default_value_t = 3, help_heading = SENDING, hide_short_help = true)]
    pub(crate) retries: u32,
    /// Print the request and response MADs in hex (as saquery -d -d).
    #[arg(short = 'd', long, action = clap::ArgAction::Count, help_heading = SENDING, hide_short_help = true)]
    pub(crate) debug: u8,
    /// Show send and receive errors: the request, and the answer if one
    /// came, in hex when the SA refuses or does not answer.
    #[arg(short = 'e', long, help_heading = SENDING, hide_short_help = true)]
    pub(crate) errors: bool,
    /// Log more of what lsaquery does (-v: info, -vv: debug; RUST_LOG
    /// overrides).
    #[arg(short = 'v', long, action = clap::ArgAction::Count, help_heading = SENDING, hide_short_help = true)]
    pub(crate) verbose: u8,
    /// infiniband-diags' defaults file: its CA, Port, timeout and sa_key
    /// apply where the command line gives none (default
    /// /etc/infiniband-diags/ibdiag.conf, if it exists).
    #[arg(short = 'z', long = "config", value_name = "FILE", help_heading = SENDING, hide_short_help = true)]
    pub(crate) config: Option<std::path::PathBuf>,
    /// Print the manual page lsaquery(8) (man), the catalogue of the
    /// watch's --metrics-file metrics in Markdown (metrics) or a shell's
    /// completion script (bash, zsh, fish) and exit.
    #[arg(long, value_name = "WHAT", value_parser = ["man", "metrics", "bash", "zsh", "fish"], help_heading = SENDING, hide_short_help = true)]
    pub(crate) generate: Option<String>,

    /// Subscribe to notices with this trap number (or "all"), print them.
    ///
    /// Prints every Report until --count, --duration or Ctrl-C, then
    /// unsubscribes. Needs
    /// the SA to reach this node (under ibsim: SIM_SET_ISSM=1).
    #[arg(long, value_name = "TRAP", help_heading = REGISTRATIONS)]
    pub(crate) subscribe: Option<String>,
    /// With --subscribe: stop after this many notices.
    #[arg(long, help_heading = REGISTRATIONS, hide_short_help = true)]
    pub(crate) count: Option<u64>,
    /// With --subscribe: stop after this many seconds.
    #[arg(long, value_name = "SECS", help_heading = REGISTRATIONS, hide_short_help = true)]
    pub(crate) duration: Option<u64>,
    /// Join the multicast group MGID and hold the membership.
    ///
    /// "::" asks the SA to assign the MGID. Joins with --join_state
    /// (default 1, full member) and this port's GID, until --count,
    /// --duration or Ctrl-C.
    #[arg(long, value_name = "MGID", help_heading = REGISTRATIONS)]
    pub(crate) join: Option<Gid>,
    /// With --join: create the group if it does not exist, filling Q_Key,
    /// P_Key, TClass, FlowLabel and SL the options leave out with 0, 0xFFFF,
    /// 0, 0 and 0 (an SA-assigned MGID always creates).
    #[arg(long, help_heading = REGISTRATIONS, hide_short_help = true)]
    pub(crate) create: bool,
    /// Leave the multicast group MGID (the --join_state bits, default 1).
    #[arg(long, value_name = "MGID", help_heading = REGISTRATIONS, hide_short_help = true)]
    pub(crate) leave: Option<Gid>,

    /// Push the PathRecords of a text dump to a local-sa (Set over RMPP).
    ///
    /// FILE is a text dump as saquery and lsaquery -p print it; its
    /// records go to the SA with Set over RMPP ("SetTable"). Give the SA's
    /// --smkey. Prints how many it stored.
    #[arg(long, value_name = "FILE", help_heading = LOADS)]
    pub(crate) load: Option<std::path::PathBuf>,
    /// With --load: FILE is the whole table of every source port it names;
    /// the SA drops those sources' other paths.
    #[arg(long, requires = "load", help_heading = LOADS, hide_short_help = true)]
    pub(crate) replace: bool,
    /// With --load, --delete or --delete-matching: the records are
    /// partition tables' (local-sa's PARTITION_TABLES): each goes to, or
    /// leaves, the table of its P_Key's partition, as `--dump --pkey P`
    /// prints them.
    #[arg(long, requires = "loading", help_heading = LOADS, hide_short_help = true)]
    pub(crate) partitions: bool,
    /// Delete the PathRecords of a text dump from a local-sa.
    ///
    /// By their SLID/DLID pairs; give the SA's --smkey.
    #[arg(long, value_name = "FILE", help_heading = LOADS)]
    pub(crate) delete: Option<std::path::PathBuf>,
    /// Delete every PathRecord matching the PathRecord options (--slid,
    /// --dlid, --sgid, --dgid, --pkey, --sl, ...); give the SA's --smkey.
    #[arg(long = "delete-matching", help_heading = LOADS, hide_short_help = true)]
    pub(crate) delete_matching: bool,

    /// Resolve a host name, IP address, GID or LID as ib_acme does.
    ///
    /// DEST's path set comes through the ibacm protocol from local-sa's
    /// ibacm socket (--acm-socket), answered from its cache like a PathRecord
    /// query. No umad access needed.
    #[arg(long, value_name = "DEST", conflicts_with_all = ["load", "delete", "delete_matching", "bench", "subscribe", "join", "leave"], help_heading = LOCAL)]
    pub(crate) resolve: Option<String>,
    /// With --resolve: the source endpoint (a name, address, GID or LID of
    /// this node; default: the one the server chooses, as ibacm does).
    #[arg(long, value_name = "SRC", requires = "resolve", help_heading = LOCAL, hide_short_help = true)]
    pub(crate) source: Option<String>,
    /// With --resolve: how to read DEST and --source (default: a number is
    /// a LID, an IPv6 address in fe80::/64 a GID, other addresses IPs,
    /// anything else a name).
    #[arg(
        long = "resolve-as",
        value_enum,
        value_name = "KIND",
        requires = "resolve",
        help_heading = LOCAL,
        hide_short_help = true,
    )]
    pub(crate) resolve_as: Option<crate::resolve::AddressKind>,
    /// With --resolve: answer from the cache only (ENODATA on a miss),
    /// like ib_acme -c.
    #[arg(long = "cached-only", requires = "resolve", help_heading = LOCAL, hide_short_help = true)]
    pub(crate) cached_only: bool,
    /// With --resolve or --warm: the ibacm-protocol socket (default
    /// /run/ibacm-unix.sock, where local-sa serves it and ib_acme looks).
    #[arg(long = "acm-socket", value_name = "PATH", requires = "acm_user", help_heading = LOCAL, hide_short_help = true)]
    pub(crate) acm_socket: Option<std::path::PathBuf>,
    /// Refresh local-sa's cache of this port's paths from the master SA
    /// now, and print the PathRecords held before and after and the time
    /// it took (root or local-sa's own user; through the local API).
    #[arg(long, group = "cache_control", conflicts_with_all = CACHE_CONTROL_CONFLICTS, help_heading = LOCAL, hide_short_help = true)]
    pub(crate) refresh: bool,
    /// Drop every PathRecord local-sa holds for this port: its queries go
    /// to the master SA until the next refresh or load (root or
    /// local-sa's own user).
    #[arg(long, group = "cache_control", conflicts_with_all = CACHE_CONTROL_CONFLICTS, help_heading = LOCAL, hide_short_help = true)]
    pub(crate) flush: bool,
    /// Print every PathRecord this node's local-sa holds.
    ///
    /// This port's, in (SLID, DLID) order, as -p prints them (or --json), fetched and printed a
    /// page at a time (root or local-sa's own user).
    #[arg(long, group = "cache_control", conflicts_with_all = CACHE_CONTROL_CONFLICTS, help_heading = LOCAL)]
    pub(crate) dump: bool,
    /// How local-sa is doing on each port of this node.
    ///
    /// Each port's (or the one -C/-P or --api-socket names): the port and its master SA, records and
    /// when they were refreshed, consumers, queries, the daemon and its
    /// last warnings; --json for one object per port. Anyone may ask.
    #[arg(long, group = "cache_control", conflicts_with_all = CACHE_CONTROL_CONFLICTS, help_heading = LOCAL)]
    pub(crate) status: bool,
    /// Before a job: fill local-sa with the paths to the job's peers.
    ///
    /// The peers are host names, IP addresses, GIDs or LIDs,
    /// comma-separated, or a file of them; the job's path queries are then
    /// answered from local-sa's cache. Asks
    /// local-sa for the path to each peer on every P_Key of the port (or
    /// --pkey's), without a ServiceID and with each --service-id, --window
    /// at a time through the local API; prints how they were answered and
    /// where from. Exit status 1 if a host or query was not warmed.
    #[arg(long, value_name = "HOSTS", conflicts_with_all = WARM_CONFLICTS, help_heading = LOCAL)]
    pub(crate) warm: Option<String>,

    /// Check, read-only, that local-sa answers what the master SA answers.
    ///
    /// What is checked, the same ask to both: paths (a sample of destinations × each P_Key ×
    /// with and without a ServiceID, the same Get to both; this port's
    /// table as a set), the same paths through the ibacm socket (by GID,
    /// LID, host name and the IPs other local-sa nodes publish), the
    /// kernel door's counters before and after, subscriptions and
    /// memberships against the master's records for the port, and
    /// local-sa's health. Prints OK, DIFFERENT or NOT CHECKED
    /// per part with the reason and the next command to run (--json for
    /// scripts). Changes nothing; sends no SM_Key. Exit status 0 when
    /// everything checked is equal, 1 when something differs, 5 when the
    /// paths could not be checked (the master or local-sa did not answer).
    #[arg(long, conflicts_with_all = WARM_CONFLICTS, help_heading = VERIFYING)]
    pub(crate) verify: bool,
    /// With --verify: how many destinations to check, spread over the
    /// fabric's LIDs, or "all".
    #[arg(long, value_name = "N|all", value_parser = sample_size, default_value = "200", requires = "verify", help_heading = VERIFYING, hide_short_help = true)]
    pub(crate) sample: SampleSize,
    /// With --verify: queries per second to the master SA at most (and to
    /// local-sa), so that the check is safe on a busy fabric. (--rate is
    /// the PathRecord field, as in saquery.)
    #[arg(long = "query-rate", value_name = "Q", default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..), requires = "verify", help_heading = VERIFYING, hide_short_help = true)]
    pub(crate) query_rate: u32,

    /// With --warm: a ServiceID the job's queries name (rdma_cm's are
    /// 0x1060000 | port for TCP-like ports), or a range A-B; repeat for
    /// more. With --verify: the ServiceIDs paths are checked with (the
    /// first of each range; default 0x1060000). With --distribute: each
    /// node also gets its table at each ServiceID on each of its P_Keys,
    /// for its QoS cache, when the master applies QoS (at most 64 IDs and
    /// classes). With --compute and --opensm-config on such a master:
    /// those tables are computed with OpenSM's QoS policy and checked too
    /// (without the configuration they come from the master). (--service_id
    /// is the field of a -p query.)
    #[arg(long = "service-id", value_name = "ID[-ID]", value_parser = service_ids, requires = "service_id_user", help_heading = DISTRIBUTING, hide_short_help = true)]
    pub(crate) service_ids: Vec<std::ops::RangeInclusive<u64>>,
    /// Fill every local-sa on the fabric with its PathRecords.
    ///
    /// From the master SA (or --from FILE): each node's table as one load with
    /// REPLACE_SOURCES, which stands for the node's own refresh. Give the
    /// nodes' --smkey. Prints a summary; exit status 1 if a node was not
    /// filled.
    #[arg(long, conflicts_with_all = ["load", "delete", "delete_matching", "bench", "subscribe", "join", "leave", "resolve"], help_heading = DISTRIBUTING)]
    pub(crate) distribute: bool,
    /// With --distribute or --compute: a QoS class (or a range A-B;
    /// repeat for more) whose table each node also gets on each of its
    /// P_Keys, as for --service-id. (--qos_class is the field of a -p
    /// query.)
    #[arg(long = "qos-class", value_name = "CLASS[-CLASS]", value_parser = qos_classes, requires = "fabric_wide", help_heading = DISTRIBUTING, hide_short_help = true)]
    pub(crate) qos_classes: Vec<std::ops::RangeInclusive<u16>>,
    /// With --distribute: only the ports at these LIDs (their lowest),
    /// e.g. 4,7,20-40.
    #[arg(long, value_name = "LIDS", value_parser = lid_list, requires = "distribute", help_heading = DISTRIBUTING, hide_short_help = true)]
    pub(crate) targets: Option<LidList>,
    /// With --distribute: this distributor's share of the nodes, I of K
    /// (1 <= I <= K): K distributors started on K nodes (by pdsh, clush,
    /// the job launcher), each with its own I, fill disjoint shares that
    /// together are every node, each from its own port (a port sends
    /// some 250,000 MADs a second: one fills 10,000 nodes in about two
    /// minutes). A node's share follows from its port GUID alone. Each
    /// reads what it needs from the master itself (with --compute: the
    /// description, once per shard).
    #[arg(long, value_name = "I/K", value_parser = shard, requires = "distribute", help_heading = DISTRIBUTING, hide_short_help = true)]
    pub(crate) shard: Option<Shard>,
    /// With --distribute: take the records from this dump (as -p, --dump
    /// or --snapshot write them) rather than from the master; its sources
    /// are the ports probed. A snapshot's partition tables go too.
    #[arg(long, value_name = "FILE", requires = "distribute", help_heading = DISTRIBUTING, hide_short_help = true)]
    pub(crate) from: Option<std::path::PathBuf>,
    /// With --distribute: write every record the nodes now hold, as a
    /// dump, for a later --delta: the default tables' records, then the
    /// partition tables', each after its section line. With --compute
    /// alone: every computed record, the same way.
    #[arg(long, value_name = "FILE", requires = "fabric_wide", help_heading = DISTRIBUTING, hide_short_help = true)]
    pub(crate) snapshot: Option<std::path::PathBuf>,
    /// With --distribute: send each node only what changed since this
    /// snapshot (a Set of new and changed records, a Delete of the pairs
    /// gone), for its default table and its partition tables; a table the
    /// snapshot holds nothing of goes whole. Tables at --service-id and
    /// --qos-class go whole every time.
    #[arg(long, value_name = "FILE", requires = "distribute", help_heading = DISTRIBUTING, hide_short_help = true)]
    pub(crate) delta: Option<std::path::PathBuf>,
    /// With --distribute or --compute: queries in flight at the master at
    /// once.
    #[arg(
        long = "master-window",
        value_name = "N",
        default_value_t = 16,
        requires = "fabric_wide",
        help_heading = DISTRIBUTING,
        hide_short_help = true,
    )]
    pub(crate) master_window: usize,
    /// With --distribute: milliseconds each attempt of a whole table at
    /// the master waits (the master may take long over a big one;
    /// --retries more attempts follow the first).
    #[arg(
        long = "table-timeout",
        value_name = "MS",
        default_value_t = 12_000,
        requires = "distribute",
        help_heading = DISTRIBUTING,
        hide_short_help = true,
    )]
    pub(crate) table_timeout_ms: u64,

    /// Compute every node's tables from the fabric's description.
    ///
    /// The description (switches' forwarding tables, ports, links,
    /// partitions: records proportional to the fabric) is read from the
    /// master once, instead of asking it for N tables of N paths; a sample
    /// is checked against the master's own answers (--check-sample). Alone:
    /// report, and write the tables with --snapshot (exit status 1 if a
    /// sampled record differs, 5 if the description does not hold
    /// together). With --distribute: push the computed tables; tables the
    /// check does not prove come from the master. Needs the master's SA
    /// key as --smkey (P_Key tables).
    #[arg(long, conflicts_with_all = ["load", "delete", "delete_matching", "bench", "subscribe", "join", "leave", "resolve", "from"], help_heading = COMPUTING)]
    pub(crate) compute: bool,
    /// With --compute: how many pairs to check against the master (spread
    /// over every node and switch pair, and over each partition), or
    /// "all"; a fabric with fewer pairs has all of them checked. Whatever
    /// N, every endport is a source and a destination at least once in
    /// each kind of table (about N queries a kind at N endports), so that
    /// what local-sa was not told is caught.
    #[arg(long = "check-sample", value_name = "N|all", value_parser = sample_size, default_value = "1000", requires = "compute", help_heading = COMPUTING, hide_short_help = true)]
    pub(crate) check_sample: SampleSize,
    /// With --compute: the seed of the sample's choice (the same seed, the
    /// same pairs).
    #[arg(long = "check-seed", value_name = "SEED", value_parser = number::<u64>, default_value = "1", requires = "compute", help_heading = COMPUTING, hide_short_help = true)]
    pub(crate) check_seed: u64,
    /// With --distribute --compute: never take from the master a table
    /// that was meant to be computed. When the description cannot be
    /// read or used, or the check finds a table that differs, exit with
    /// status 5 before anything is sent (with --watch: at the fill, or at
    /// any later event, ending every lease), instead of filling the nodes
    /// from the master at the cost of every node's paths.
    #[arg(long = "no-fallback", requires_all = ["distribute", "compute"], help_heading = COMPUTING, hide_short_help = true)]
    pub(crate) no_fallback: bool,
    /// With --compute: OpenSM's own configuration (its opensm.conf, and
    /// the partitions, QoS policy and node name map files it names, or
    /// OpenSM's defaults in /etc/opensm), for what its SA does not
    /// publish: each partition's SL and name, the QoS policy's levels.
    /// Read as OpenSM reads them: a policy OpenSM refuses is dropped, as
    /// OpenSM drops it; a configuration that is not the master's (qos
    /// differs from its ClassPortInfo) is named in the summary and not
    /// used; a routing engine with SLs of its own sends every table from
    /// the master. With --watch, read again after every sweep of the
    /// master, as OpenSM reads them. Default: the `opensm_config` of the
    /// --config file (infiniband-diags' ibdiag.conf format), when that
    /// file exists.
    #[arg(long = "opensm-config", value_name = "FILE", requires = "compute", help_heading = COMPUTING, hide_short_help = true)]
    pub(crate) opensm_config: Option<std::path::PathBuf>,
    /// With --distribute --compute: stay and keep every node current.
    ///
    /// On a notice that a link went up or down (trap 128)
    /// or a port came or went (64/65), heard through this node's local-sa
    /// (--api-socket) or, where none runs, subscribed at the master SA by
    /// the watch itself, on a heavy sweep its polls see (--watch-poll),
    /// and every --watch-interval: wait --settle for the master's sweep,
    /// read the fabric's description again (after a sweep, OpenSM's files
    /// too), recompute, check changed pairs and every endport against the
    /// master (after a sweep that changed nothing, every endport all the
    /// same), and push each node whose tables changed only the difference
    /// (a Set of the changed, a Delete of the vanished). Every push and a renewal every --watch-renew
    /// carry a lease (--lease): the nodes refresh nothing on their own
    /// while it runs, and take loads from no other distributor. A second
    /// --watch on another node stands by (as OpenSM's standby SMs): it
    /// takes over when the nodes find the active one silent for two
    /// renewals, and one that comes back after that is fenced off and
    /// stands by. Runs until SIGINT or SIGTERM, which ends the leases.
    #[arg(long, requires_all = ["distribute", "compute"], conflicts_with_all = ["delta", "targets", "from"], help_heading = COMPUTING)]
    pub(crate) watch: bool,
    /// With --watch: seconds between re-reads of the description when no
    /// notice comes.
    #[arg(long = "watch-interval", value_name = "SECS", value_parser = number::<u64>, default_value = "60", requires = "watch", help_heading = COMPUTING, hide_short_help = true)]
    pub(crate) watch_interval: u64,
    /// With --watch: seconds between polls of the master SM's activity
    /// (its SMInfoRecord, one small record): a rise of its ActCount well
    /// past what its light sweeps send is a heavy sweep, looked into as a
    /// notice would be — the trap 128 that comes before it is lost on the
    /// way to a node whose path from the master crossed the link that
    /// went down. 0: no polls (notices and the interval only).
    #[arg(long = "watch-poll", value_name = "SECS", value_parser = number::<u64>, default_value = "2", requires = "watch", help_heading = COMPUTING, hide_short_help = true)]
    pub(crate) watch_poll: u64,
    /// With --watch: seconds between lease renewals (one small MAD to
    /// each node). A node takes the watch as gone after two renewals
    /// missed, so a standby takes over within about three (and standing
    /// by, claims the lease every half of this).
    #[arg(long = "watch-renew", value_name = "SECS", value_parser = number::<u64>, default_value = "8", requires = "watch", help_heading = COMPUTING, hide_short_help = true)]
    pub(crate) watch_renew: u64,
    /// With --watch: seconds to let the master sweep and reroute after a
    /// notice (each later notice waits again) before reading.
    #[arg(long, value_name = "SECS", value_parser = number::<u64>, default_value = "5", requires = "watch", help_heading = COMPUTING, hide_short_help = true)]
    pub(crate) settle: u64,
    /// With --watch: the lease, in seconds, that every push and renewal
    /// gives the nodes (default: three intervals and the settle time, at
    /// least 60; at least twice --watch-renew); a node that hears nothing
    /// from the watch for that long, or for two renewals once it has seen
    /// two, checks and keeps its own tables again.
    #[arg(long, value_name = "SECS", value_parser = number::<u16>, requires = "watch", help_heading = COMPUTING, hide_short_help = true)]
    pub(crate) lease: Option<u16>,
    /// With --watch: pairs whose tables changed to check against the
    /// master at each change before pushing.
    #[arg(long = "watch-check", value_name = "N", value_parser = number::<usize>, default_value = "64", requires = "watch", help_heading = COMPUTING, hide_short_help = true)]
    pub(crate) watch_check: usize,
    /// With --watch: write the watch's counters here in Prometheus' text
    /// format after every event and renewal round (a node exporter's
    /// textfile collector reads it).
    #[arg(long = "metrics-file", value_name = "PATH", requires = "watch", help_heading = COMPUTING, hide_short_help = true)]
    pub(crate) metrics_file: Option<std::path::PathBuf>,

    /// Benchmark: send the query N times, --window at a time, and print the
    /// answer rate and latency percentiles.
    #[arg(long, value_name = "N", value_parser = number::<u64>, help_heading = BENCH, hide_short_help = true)]
    pub(crate) bench: Option<u64>,
    /// With --bench or --warm: queries outstanding at once. With
    /// --distribute: nodes being fetched for or loaded at once.
    #[arg(long, value_name = "W", default_value_t = 16, requires = "windowed", help_heading = BENCH, hide_short_help = true)]
    pub(crate) window: usize,
}

/// LIDs, sorted and without repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LidList(pub(crate) Vec<u16>);

/// A list of LIDs and LID ranges: `4,7,20-40`.
fn lid_list(s: &str) -> Result<LidList, String> {
    let mut lids = Vec::new();
    for part in s.split(',').map(str::trim) {
        let (first, last) = match part.split_once('-') {
            Some((a, b)) => (number::<u16>(a.trim())?, number::<u16>(b.trim())?),
            None => {
                let l = number::<u16>(part)?;
                (l, l)
            }
        };
        if first == 0 || last < first || last > MAX_UNICAST_LID {
            return Err(format!(
                "{part:?} is not a LID or a range of LIDs (1-{MAX_UNICAST_LID})"
            ));
        }
        lids.extend(first..=last);
    }
    lids.sort_unstable();
    lids.dedup();
    Ok(LidList(lids))
}

/// `--shard I/K`: share I (1-based) of K, at most 4096.
fn shard(text: &str) -> Result<Shard, String> {
    let usage = || format!("{text:?}: expected I/K, 1 <= I <= K <= 4096 (e.g. 2/4)");
    let (i, k) = text.split_once('/').ok_or_else(usage)?;
    let (index, of) = (
        number::<u32>(i.trim()).map_err(|_| usage())?,
        number::<u32>(k.trim()).map_err(|_| usage())?,
    );
    if index == 0 || index > of || of > 4096 {
        return Err(usage());
    }
    Ok(Shard::new(index, of))
}

/// `--sample`: a number of destinations, or all of them (`None`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SampleSize(pub(crate) Option<usize>);

fn sample_size(text: &str) -> Result<SampleSize, String> {
    if text.eq_ignore_ascii_case("all") {
        return Ok(SampleSize(None));
    }
    match number::<u32>(text)? {
        0 => Err("--sample must be at least 1 (or \"all\")".into()),
        n => Ok(SampleSize(Some(n as usize))),
    }
}

fn qos_classes(text: &str) -> Result<std::ops::RangeInclusive<u16>, String> {
    let classes = number_range::<u16>(text)?;
    if *classes.end() > 0x0FFF {
        return Err(format!("{text:?}: a QoS class is 12 bits (at most 0xfff)"));
    }
    Ok(classes)
}

fn service_ids(text: &str) -> Result<std::ops::RangeInclusive<u64>, String> {
    number_range::<u64>(text)
}

/// One number, or a range `A-B` of them.
fn number_range<T: TryFrom<u64> + PartialOrd + Copy>(
    text: &str,
) -> Result<std::ops::RangeInclusive<T>, String> {
    let (first, last) = match text.split_once('-') {
        Some((a, b)) => (number::<T>(a.trim())?, number::<T>(b.trim())?),
        None => {
            let one = number::<T>(text.trim())?;
            (one, one)
        }
    };
    if first > last {
        return Err(format!("{text:?}: the range ends before it starts"));
    }
    Ok(first..=last)
}

/// What --refresh, --flush and --dump go with none of: they act on
/// local-sa's cache through its local API, one at a time.
const CACHE_CONTROL_CONFLICTS: [&str; 11] = [
    "load",
    "delete",
    "delete_matching",
    "bench",
    "subscribe",
    "join",
    "leave",
    "resolve",
    "master",
    "sa_lid",
    "query",
];

/// What --warm goes with none of: it is a mode of its own.
const WARM_CONFLICTS: [&str; 15] = [
    "load",
    "delete",
    "delete_matching",
    "bench",
    "subscribe",
    "join",
    "leave",
    "resolve",
    "distribute",
    "compute",
    "master",
    "sa_lid",
    "query",
    "path_records",
    "cache_control",
];

/// The SA method to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum MethodArg {
    /// Get: one record.
    Get,
    /// GetTable: every matching record.
    #[value(name = "gettable")]
    GetTable,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_ids_are_one_or_a_range() {
        assert_eq!(service_ids("0x10"), Ok(0x10..=0x10));
        assert_eq!(
            service_ids("0x1060000-0x1060003"),
            Ok(0x0106_0000..=0x0106_0003)
        );
        assert!(service_ids("9-3").is_err());
        assert!(service_ids("x").is_err());
        assert_eq!(qos_classes("3-4"), Ok(3..=4));
        assert!(qos_classes("0x1000").is_err(), "12 bits");
        use clap::Parser;
        let cli = Cli::try_parse_from([
            "lsaquery",
            "--distribute",
            "--service-id",
            "0x1060001",
            "--qos-class",
            "3",
        ])
        .unwrap();
        assert_eq!((cli.service_ids.len(), cli.qos_classes.len()), (1, 1));
        assert!(Cli::try_parse_from(["lsaquery", "--qos-class", "3"]).is_err());
    }

    #[test]
    fn a_sample_is_a_positive_number_or_all() {
        assert_eq!(sample_size("all"), Ok(SampleSize(None)));
        assert_eq!(sample_size("0x10"), Ok(SampleSize(Some(16))));
        assert!(sample_size("0").is_err());
        assert!(sample_size("some").is_err());
    }

    #[test]
    fn verify_goes_with_its_options_and_not_with_another_mode() {
        use clap::Parser;
        let cli = Cli::try_parse_from([
            "lsaquery",
            "--verify",
            "--sample",
            "all",
            "--query-rate",
            "50",
        ])
        .unwrap();
        assert!(cli.verify);
        assert_eq!((cli.sample, cli.query_rate), (SampleSize(None), 50));
        for bad in [
            &["lsaquery", "--verify", "--warm", "h1"][..],
            &["lsaquery", "--sample", "5"],
            &["lsaquery", "--verify", "--query-rate", "0"],
            &["lsaquery", "--verify", "--master"],
        ] {
            assert!(Cli::try_parse_from(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn a_shard_is_one_of_k() {
        assert_eq!(shard("2/4").map(|s| s.to_string()), Ok("2/4".to_owned()));
        assert_eq!(shard("1/1"), Ok(Shard::new(1, 1)));
        for bad in ["0/4", "5/4", "4", "/4", "1/0", "1/5000", "a/b"] {
            assert!(shard(bad).is_err(), "{bad:?}");
        }
        use clap::Parser;
        assert!(
            Cli::try_parse_from(["lsaquery", "--shard", "1/2"]).is_err(),
            "needs --distribute"
        );
    }

    #[test]
    fn lid_lists_take_ranges_and_refuse_nonsense() {
        assert_eq!(lid_list("4, 7,2-3,7").unwrap().0, [2, 3, 4, 7]);
        assert_eq!(lid_list("0x10").unwrap().0, [16]);
        for bad in ["0", "5-3", "x", "4,,5", "", "49152"] {
            assert!(lid_list(bad).is_err(), "{bad:?}");
        }
    }
}
