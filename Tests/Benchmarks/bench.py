"""Driver for scripts/bench. Runs inside scripts/with-keyring (a throwaway gnome-keyring).

Usage: bench.py --bin DIR --idtool PATH --bench PATH --reference PATH [--quick] [--json FILE] [--max-items N]
                [--process-only | --file-only]

All timings come from the programs themselves (clock_gettime(CLOCK_MONOTONIC)): keyring-bench and
reference time in-process calls; `reference spawn` fork/execs whole processes and times each.
Cases that compare two things interleave them: whole processes A,B,C,A,B,C...; in-process cases
alternate one process of ours and one reference process, block by block, for several rounds.
"""
import json, os, statistics, subprocess, sys, time

US = "\x1f"


def parse_args(argv):
    opts = {"quick": False, "json": None, "max_items": 10000, "process_only": False, "file_only": False}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--quick": opts["quick"] = True
        elif a == "--process-only": opts["process_only"] = True
        elif a == "--file-only": opts["file_only"] = True
        elif a in ("--json", "--idtool", "--bench", "--reference", "--max-items", "--machine"):
            opts[a[2:].replace("-", "_")] = argv[i + 1]; i += 1
        else: sys.exit(f"bench.py: unknown argument {a}")
        i += 1
    opts["max_items"] = int(opts["max_items"])
    return opts


O = parse_args(sys.argv[1:])
IDTOOL, BENCH, REF = O["idtool"], O["bench"], O["reference"]
Q = O["quick"]
FILE_ONLY = O["file_only"]  # only the file-backend cases (F1, F2)
P = dict(  # repetitions
    spawn_reps=20 if Q else 60,
    read_rounds=6 if Q else 20, read_block=25 if Q else 50,
    write_rounds=4 if Q else 10, write_block=10 if Q else 20,
    warm_batches=20 if Q else 100,
    cold_rounds=3 if Q else 6, cold_block=8 if Q else 15,
    races=3 if Q else 10,
    scale_rounds=4 if Q else 8, scale_block=15 if Q else 25,
    scale_sizes=[s for s in ([10, 300] if Q else [10, 1000, 10000]) if s <= O["max_items"]],
)
started = time.monotonic()
results = []  # dicts: case, name, ours, reference, ratio, unit, notes, n_ours, n_ref


def log(msg):
    print(f"[{time.monotonic() - started:6.1f}s] {msg}", file=sys.stderr, flush=True)


def run(cmd, check=True):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and p.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()}")
    return p


def samples(out, label=None):
    got = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "sample":
            got.setdefault(parts[1], []).append(float(parts[2]))
    return got if label is None else got.get(label, [])


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def record(case, name, ours, ref, notes="", unit="ms"):
    scale = 1e6 if unit == "ms" else 1.0
    m_o = med(ours) / scale if ours else None
    m_r = med(ref) / scale if ref else None
    results.append(dict(case=case, name=name, unit=unit,
                        ours=m_o, reference=m_r,
                        ratio=(m_o / m_r) if (m_o and m_r) else None,
                        ours_p10_p90=[q / scale for q in quantiles(ours)] if ours else None,
                        reference_p10_p90=[q / scale for q in quantiles(ref)] if ref else None,
                        n_ours=len(ours or []), n_reference=len(ref or []), notes=notes))


def quantiles(xs):
    xs = sorted(xs)
    return [xs[int(0.1 * (len(xs) - 1))], xs[int(0.9 * (len(xs) - 1))]]


def interleaved(ours_cmd, ref_cmd, rounds):
    """Alternate one process of ours and one reference process; collect their warm samples."""
    ours, ref, ours_first, ref_first = [], [], [], []
    for r in range(rounds):
        order = [(ours_cmd, ours, ours_first), (ref_cmd, ref, ref_first)]
        if r % 2: order.reverse()
        for cmd, warm, first in order:
            s = samples(run(cmd(r)).stdout)
            warm += s.get("warm", []); first += s.get("first", [])
    return ours, ref, ours_first, ref_first


# ---------------------------------------------------------------- setup
items = 10
if not FILE_ONLY:
    log("setup: bench.app identifier, bench.item SecretStore item")
    run([IDTOOL, "get", "--app", "bench.app"])
    subprocess.run([IDTOOL, "item", "set", "bench.item"], input="bench-secret-value", text=True, check=True,
                   stdout=subprocess.DEVNULL)
    log(f"populate 10 unrelated items")
    run([REF, "populate", "0", "10"])

    # ---------------------------------------------------------------- case 1 + 8 (whole process)
    log(f"case 1/8: whole processes, {P['spawn_reps']} interleaved repetitions")
    py = "import keyring; v = keyring.get_password('bench.item', ''); assert v == 'bench-secret-value'"
    specs = {
        "idtool_get": [IDTOOL, "get", "--app", "bench.app"],
        "secret_tool_lookup": ["secret-tool", "lookup", "identity-scope", "app", "identity-name", "bench.app"],
        "python_keyring": ["/usr/bin/python3", "-c", py],
        "idtool_item_get": [IDTOOL, "item", "get", "bench.item"],
        "secret_tool_lookup_item": ["secret-tool", "lookup", "service", "bench.item", "username", ""],
        "c_one_lookup": [REF, "lookup", "0", "service", "bench.item", "username", ""],
        "idtool_version": [IDTOOL, "--version"],
        "c_noop": [REF, "noop"],
        "secret_tool_usage:2": ["secret-tool"],
        "true": ["/bin/true"],
    }
    out = run([REF, "spawn", str(P["spawn_reps"])] + [f"{k}={US.join(v)}" for k, v in specs.items()]).stdout
    S = samples(out)
    record("1", "`idtool get --app A` (identifier present) vs `secret-tool lookup` of that item", S["idtool_get"], S["secret_tool_lookup"],
           "whole process, fork/exec to exit")
    record("8", "`idtool get` vs python-keyring `get_password` (/usr/bin/python3, keyring 23.9)", S["idtool_get"], S["python_keyring"],
           "python reads the SecretStore item bench.item (service/username)")
    record("1b", "`idtool item get I` (SecretStore read) vs `secret-tool lookup service I username ''`", S["idtool_item_get"], S["secret_tool_lookup_item"],
           "same item")
    record("1c", "`idtool get` vs C: one `secret_password_lookupv_sync` in a fresh process", S["idtool_get"], S["c_one_lookup"],
           "reference = reference.c lookup 0")
    record("1d", "start-up: `idtool --version` vs C program linked to libsecret doing nothing", S["idtool_version"], S["c_noop"],
           f"secret-tool (usage, exit 2): {med(S['secret_tool_usage'])/1e6:.2f} ms; /bin/true: {med(S['true'])/1e6:.2f} ms")

# ---------------------------------------------------------------- case 2
if not O["process_only"] and not FILE_ONLY:  # cases 2, 3, 4 and 6 are in-process
    def read_case(rounds, block):
        return interleaved(lambda r: [BENCH, "read", str(block), "bench.item"],
                           lambda r: [REF, "lookup", str(block), "service", "bench.item", "username", ""], rounds)

    log(f"case 2: warm in-process reads, {P['read_rounds']} rounds x {P['read_block']} calls each side")
    o, r, of, rf = read_case(P["read_rounds"], P["read_block"])
    record("2", "warm `SecretStore.object(forKey: .valueData)` vs `secret_password_lookupv_sync` (C loop)", o, r,
           f"{items} unrelated items; first call in process: ours {med(of)/1e6:.1f} ms, C {med(rf)/1e6:.1f} ms")
    record("2a", "first call in a process (connect + session + read)", of, rf, f"{len(of)} processes each")

    # ---------------------------------------------------------------- case 3
    log("case 3: warm identifier()")
    s = samples(run([BENCH, "warm-id", str(P["warm_batches"]), "bench.app"]).stdout)
    record("3", "warm `IdentifierResolver.identifier()` (from memory), ns per call", s["warm"], None,
           "median of batches of 100 000 calls; goal < 1000 ns", unit="ns")

    # ---------------------------------------------------------------- case 4
    log("case 4: writes")
    o, r, _, _ = interleaved(lambda k: [BENCH, "write", str(P["write_block"]), "bench.write"],
                             lambda k: [REF, "store", str(P["write_block"]), "service", "bench.write.ref", "username", ""],
                             P["write_rounds"])
    record("4", "`SecretStore.setObject` (update existing item) vs `secret_password_storev_sync`", o, r, "warm, in-process")

    # ---------------------------------------------------------------- case 6
    log("case 6: cold first-run resolves")
    o, r, _, _ = interleaved(lambda k: [BENCH, "cold", str(P["cold_block"]), f"cold{k}"],
                             lambda k: [REF, "store-new", str(P["cold_block"]), f"coldref{k}"], P["cold_rounds"])
    record("6", "first-run `resolve()` of a new app (lock, generate, write keyring + backup) vs storev of a new item", o, r,
           "warm connection, new app each call")

# ---------------------------------------------------------------- case 7
race_ok, distinct_all = True, []
if not FILE_ONLY:
    log("case 7: 16-process races")
    walls, distinct_all = [], []
    for k in range(P["races"]):
        p = run([REF, "race", "16", US.join([IDTOOL, "get", "--app", f"race{k}"])], check=False)
        outs = [l[4:] for l in p.stdout.splitlines() if l.startswith("out ")]
        walls += samples(p.stdout, "wall")
        distinct = len(set(outs))
        distinct_all.append(distinct)
        if p.returncode != 0 or distinct != 1 or not outs[0]:
            log(f"RACE FAILURE race{k}: rc={p.returncode} distinct={distinct} {p.stderr.strip()[:300]}")
    record("7", "16 × `idtool get --app NEW` at once: wall time", walls, None,
           f"distinct identifiers per race: {distinct_all} (must all be 1)")
    race_ok = all(d == 1 for d in distinct_all)

# ---------------------------------------------------------------- case 5
scale = []
if not O["process_only"] and not FILE_ONLY:  # case 5 (scale) is in-process
    for size in P["scale_sizes"]:
        if size > items:
            log(f"case 5: populate {items} -> {size} unrelated items")
            t = samples(run([REF, "populate", str(items), str(size)]).stdout, "populate")[0]
            log(f"  took {t/1e9:.1f} s")
            scale.append(dict(size=size, populate_seconds=t / 1e9, added=size - items))
            items = size
        else:
            scale.append(dict(size=size, populate_seconds=None, added=0))
        log(f"case 5: reads with {size} unrelated items")
        o, r, _, _ = read_case(P["scale_rounds"], P["scale_block"])
        record(f"5@{size}", f"warm read with {size} unrelated items in the collection", o, r,
               f"filling to {size} took {scale[-1]['populate_seconds']:.0f} s" if scale[-1]["populate_seconds"] else "")
        scale[-1].update(ours_ms=results[-1]["ours"], reference_ms=results[-1]["reference"])

# ---------------------------------------------------------------- file backend (F1, F2)
# libsecret's file backend, as a sandboxed app gets it: no daemon, an encrypted keyring file that
# every call opens, decrypts and (on a write) rewrites. Both sides get the same throwaway file and
# key through libsecret's test variables; ours names the backend (Keyring(backend: .file)), the C
# reference is chosen by SECRET_BACKEND=file. Each side writes its own item, so the file holds both.
if not O["process_only"]:
    import tempfile
    file_dir = tempfile.mkdtemp(prefix="bench-file-")
    file_env = dict(os.environ, SECRET_BACKEND="file", SECRET_FILE_TEST_PATH=os.path.join(file_dir, "default.keyring"),
                    SECRET_FILE_TEST_PASSWORD="bench-throwaway")

    def run_file(cmd):
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=file_env)
        if p.returncode != 0:
            sys.exit(f"bench: {' '.join(cmd)} (file backend) failed ({p.returncode}): {p.stderr.strip()}")
        return p

    def interleaved_file(ours_cmd, ref_cmd, rounds):
        ours, ref, ours_first, ref_first = [], [], [], []
        for r in range(rounds):
            order = [(ours_cmd, ours, ours_first), (ref_cmd, ref, ref_first)]
            if r % 2: order.reverse()
            for cmd, warm, first in order:
                got = samples(run_file(cmd(r)).stdout)
                warm += got.get("warm", []); first += got.get("first", [])
        return ours, ref, ours_first, ref_first

    log("file backend: setup (bench.file.item, 10 unrelated items)")
    run_file([BENCH, "file-write", "0", "bench.file.item"])
    run_file([REF, "populate", "0", "10"])
    log(f"case F1: file-backend reads, {P['read_rounds']} rounds x {P['read_block']} calls each side")
    o, r, of, rf = interleaved_file(lambda k: [BENCH, "file-read", str(P["read_block"]), "bench.file.item"],
                                    lambda k: [REF, "lookup", str(P["read_block"]), "service", "bench.file.item", "username", ""],
                                    P["read_rounds"])
    record("F1", "file backend: warm `SecretStore.object(forKey: .valueData)` on `Keyring(backend: .file)` vs `secret_password_lookupv_sync` (SECRET_BACKEND=file)", o, r,
           f"same keyring file, 12 items; first call in process: ours {med(of)/1e6:.1f} ms, C {med(rf)/1e6:.1f} ms; "
           "ours reads the file and derives its key on every call (to see other processes' writes), libsecret once per process")
    log(f"case F2: file-backend writes, {P['write_rounds']} rounds x {P['write_block']} calls each side")
    o, r, _, _ = interleaved_file(lambda k: [BENCH, "file-write", str(P["write_block"]), "bench.file.write"],
                                  lambda k: [REF, "store", str(P["write_block"]), "service", "bench.file.write.ref", "username", ""],
                                  P["write_rounds"])
    record("F2", "file backend: `SecretStore.setObject` (update existing item) vs `secret_password_storev_sync` (SECRET_BACKEND=file)", o, r,
           "warm, in-process; each write rewrites the whole file")
    import shutil
    shutil.rmtree(file_dir, ignore_errors=True)

elapsed = time.monotonic() - started
log(f"done in {elapsed:.0f} s")

# ---------------------------------------------------------------- report
def fmt(v, unit):
    if v is None: return "—"
    return f"{v:.1f} ns" if unit == "ns" else f"{v:.2f} ms"

machine = json.loads(O["machine"])
lines = ["# KeyringIdentity benchmark" + (" (--quick)" if Q else ""), ""]
lines += [f"- {k}: {v}" for k, v in machine.items()]
lines += [f"- run time: {elapsed:.0f} s (after building); repetitions: {json.dumps(P)}", ""]
lines += ["| case | ours | reference | ratio | notes |", "|---|---|---|---|---|"]
for x in results:
    ratio = f"{x['ratio']:.2f}" if x["ratio"] else "—"
    lines.append(f"| {x['case']}: {x['name']} | {fmt(x['ours'], x['unit'])} | {fmt(x['reference'], x['unit'])} | {ratio} | "
                 f"n={x['n_ours']}/{x['n_reference']}; {x['notes']} |")
lines += ["", "Medians; ratio = ours / reference from this one run." + (" Growth (case 5):" if scale else ""), ""]
if scale:
    lines += ["| unrelated items | ours | reference | ratio | fill time |", "|---|---|---|---|---|"]
for s in scale:
    ratio = s["ours_ms"] / s["reference_ms"]
    fill = f"{s['populate_seconds']:.0f} s for {s['added']}" if s["populate_seconds"] else "—"
    lines.append(f"| {s['size']} | {s['ours_ms']:.2f} ms | {s['reference_ms']:.2f} ms | {ratio:.2f} | {fill} |")
if not race_ok:
    lines += ["", "**RACE FAILURE: a 16-process race produced more than one identifier.**"]
print("\n".join(lines))
if O["json"]:
    with open(O["json"], "w") as f:
        json.dump(dict(machine=machine, quick=Q, elapsed_seconds=elapsed, parameters=P, results=results,
                       scale=scale, race_distinct=distinct_all), f, indent=2)
sys.exit(0 if race_ok else 1)
