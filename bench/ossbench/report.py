"""Markdown report from a results document (bench/results/<timestamp>.json).

markdown(doc) -> str: the issue's targets marked met / not met, then one table per workload
with absolute figures and the ratios ossmount / s3fs, / rclone-off, / local, / curl.
A failed case shows as "FAILED (reason)"; a missing one as "-"; nothing is dropped.
"""
import json
import statistics
from .mounts import PEER_OPTIONS

SERIAL_BOUND_16_AT_35 = 457  # 16 workers / 35 ms
PEERS = ["ossmount", "s3fs", "rclone-off", "rclone-full", "local", "curl"]


def find(doc, workload, **params):
    for c in doc["cases"]:
        if c["workload"] == workload and all(c.get(k) == v for k, v in params.items()):
            return c
    return None


def ok(case):
    return case is not None and case["result"].get("ok")


def fmt(x, digits=0):
    if x is None:
        return "-"
    if isinstance(x, (int, float)) and digits:
        return ("{:,.%df}" % digits).format(x)
    return "{:,.0f}".format(x) if isinstance(x, (int, float)) else str(x)


def ratio(a, b):
    if a is None or b in (None, 0):
        return None
    return a / b


def fmt_ratio(r):
    return "-" if r is None else "%.2fx" % r


def failed(case):
    return "FAILED (%s)" % str(case["result"].get("error", "?"))[:120]


def epoch(case, n):
    if not ok(case):
        return None
    for e in case["result"]["epochs"]:
        if e["epoch"] == n:
            return e
    return None


def rate(case, n=1):
    """files/s of epoch n of an imagefolder case (curl: its one pass)."""
    if not ok(case):
        return None
    if case["peer"] == "curl":
        return case["result"]["files_per_s"] if n == 1 else None
    e = epoch(case, n)
    return e["files_per_s"] if e else None


def per_file(case, n=1):
    e = epoch(case, n)
    return (e or {}).get("per_file", {})


def mark(met):
    return "**met**" if met else "**not met**"


def targets(doc):
    rows = []
    o = find(doc, "imagefolder", peer="ossmount", ttfb=35, workers=16)
    s = find(doc, "imagefolder", peer="s3fs", ttfb=35, workers=16)
    r = find(doc, "imagefolder", peer="rclone-off", ttfb=35, workers=16)
    ro, rs, rr = rate(o), rate(s), rate(r)
    if o:
        goal = 0.85 * SERIAL_BOUND_16_AT_35
        rows.append(("Epoch 1, 35 ms, 16 workers: >= 85% of 457 files/s (388.5)",
                     "%s files/s" % fmt(ro, 1), mark(ro is not None and ro >= goal)))
        rows.append(("... >= 8x s3fs", "%s (s3fs %s files/s)" % (fmt_ratio(ratio(ro, rs)), fmt(rs)),
                     mark(ratio(ro, rs) is not None and ratio(ro, rs) >= 8)))
        rows.append(("... >= 1.4x rclone (vfs off)",
                     "%s (rclone %s files/s)" % (fmt_ratio(ratio(ro, rr)), fmt(rr)),
                     mark(ratio(ro, rr) is not None and ratio(ro, rr) >= 1.4)))
        pf = per_file(o)
        g, h = pf.get("GET"), pf.get("HEAD")
        rows.append(("... 1 GET and 0 HEAD per file", "%s GET, %s HEAD per file" % (g, h),
                     mark(g is not None and g <= 1.0 and h == 0)))
    rm = find(doc, "remount", ttfb=35)
    loc = find(doc, "imagefolder", peer="local", workers=16)
    if rm:
        after = rm["result"]["after_remount"]["epochs"][0] if ok(rm) else None
        loc2 = remount_local(rm["result"], loc)
        ra = after["files_per_s"] if after else None
        gets = after["requests"].get("GET") if after else None
        r = remount_ratio(rm["result"], ra, loc2) if after else None
        rows.append(("Epoch 2 after remount with --cache: >= 0.8x local disk, zero GETs",
                     "%s (median of rounds: %s files/s, local %s), %s GETs" %
                     (fmt_ratio(r), fmt(ra), fmt(loc2), fmt(gets)),
                     mark(r is not None and r >= 0.8 and gets == 0)))
    so = find(doc, "seqread", peer="ossmount", ttfb=35)
    if so:
        sc, ss = find(doc, "seqread", peer="curl", ttfb=35), find(doc, "seqread", peer="s3fs", ttfb=35)
        mo = so["result"].get("MB_per_s") if ok(so) else None
        mc = sc["result"].get("MB_per_s") if ok(sc) else None
        ms = ss["result"].get("MB_per_s") if ok(ss) else None
        rows.append(("1 GiB sequential, 35 ms: >= single-stream curl", "%s MB/s vs curl %s MB/s" %
                     (fmt(mo), fmt(mc)), mark(mo is not None and mc is not None and mo >= mc)))
        rows.append(("... >= 2x s3fs", "%s (s3fs %s MB/s)" % (fmt_ratio(ratio(mo, ms)), fmt(ms)),
                     mark(ratio(mo, ms) is not None and ratio(mo, ms) >= 2)))
    mf = find(doc, "metadata", peer="ossmount", ttfb=35, tool="find")
    if mf:
        cold = mf["result"].get("cold", {})
        req = cold.get("requests", {})
        lists = req.get("LIST", 0)
        bound = 1.5 * lists * 0.035
        only_list = ok(mf) and req.get("GET", 1) == 0 and req.get("HEAD", 1) == 0
        rows.append(("Cold find, 100,000 keys, 35 ms: only LISTs, <= 1.5 x LIST pages x TTFB",
                     "%s s, %s LIST / %s HEAD / %s GET; bound %.2f s" %
                     (cold.get("seconds"), lists, req.get("HEAD"), req.get("GET"), bound),
                     mark(only_list and cold.get("seconds", 1e9) <= bound)))
    mem = find(doc, "memory")
    if mem:
        rss = (mem.get("daemon") or {}).get("peak_rss_mib")
        limit = mem["max_memory_mib"] + 64
        rows.append(("Peak RSS, 64 sequential readers: <= --max-memory + 64 MiB (%d MiB)" % limit,
                     "%s MiB%s" % (fmt(rss), "" if ok(mem) else " (" + failed(mem) + ")"),
                     mark(rss is not None and ok(mem) and rss <= limit)))
    out = ["| Target | Measured | |", "|---|---|---|"]
    out += ["| %s | %s | %s |" % row for row in rows]
    return "\n".join(out)


def usage_cols(case):
    d = (case or {}).get("daemon") or {}
    return "%s | %s" % (fmt(d.get("peak_rss_mib")), fmt(d.get("cpu_s"), 1) if d.get("cpu_s") else "-")


def imagefolder_tables(doc):
    out = []
    keys = sorted({(c["ttfb"], c["workers"]) for c in doc["cases"] if c["workload"] == "imagefolder"
                   and c["peer"] != "local"}, key=lambda k: (-k[0], -k[1]))
    for ttfb, workers in keys:
        out.append("\n#### ImageFolder, %d ms TTFB, %d workers\n" % (ttfb, workers))
        out.append("| Peer | Epoch 1 files/s | Epoch 1 MB/s | Epoch 2 files/s | GET/HEAD/LIST per file (epoch 1) | Epoch 2 GETs | Listing s (LISTs) | Peak RSS MiB | CPU s |")
        out.append("|---|---|---|---|---|---|---|---|---|")
        o = find(doc, "imagefolder", peer="ossmount", ttfb=ttfb, workers=workers)
        for peer in PEERS:
            c = find(doc, "imagefolder", peer=peer, ttfb=ttfb if peer != "local" else 35,
                     workers=workers)
            if c is None:
                continue
            label = peer + (" (local copy, page cache warm)" if peer == "local" else "") + \
                (" (%d-file subset)" % c["limit"] if c.get("limit") else "") + \
                (" (--parallel-max %d)" % workers if peer == "curl" else "")
            if not ok(c):
                out.append("| %s | %s | | | | | | | |" % (label, failed(c)))
                continue
            res = c["result"]
            if peer == "curl":
                rq = res.get("requests", {})
                n = res["files"] or 1
                out.append("| %s | %s | %s | - | %.2f / %.2f / %.2f | - | - | - | - |" %
                           (label, fmt(res["files_per_s"]), fmt(res["MB_per_s"]),
                            rq.get("GET", 0) / n, rq.get("HEAD", 0) / n, rq.get("LIST", 0) / n))
                continue
            e1, e2 = epoch(c, 1), epoch(c, 2)
            pf = per_file(c)
            lst = res.get("list", {})
            out.append("| %s | %s | %s | %s | %s | %s | %s (%s) | %s |" % (
                label, fmt(e1["files_per_s"]), fmt(e1["MB_per_s"]),
                fmt(e2["files_per_s"]) if e2 else "-",
                "%s / %s / %s" % (pf.get("GET", "-"), pf.get("HEAD", "-"), pf.get("LIST", "-"))
                if pf else "-", fmt((e2 or {}).get("requests", {}).get("GET")),
                lst.get("seconds", "-"),
                (lst.get("requests") or {}).get("LIST", "-"), usage_cols(c)))
        if ok(o):
            out.append("\nRatios (ossmount / peer): " + "; ".join(
                "%s epoch 1 %s, epoch 2 %s" % (
                    p, fmt_ratio(ratio(rate(o, 1), rate(pc, 1))),
                    fmt_ratio(ratio(rate(o, 2), rate(pc, 2))))
                for p, pc in ((p, find(doc, "imagefolder", peer=p, ttfb=ttfb if p != "local" else 35,
                                       workers=workers)) for p in PEERS[1:]) if ok(pc)))
    return "\n".join(out)


def remount_local(result, local_case):
    """The local reader's rate a remount case is shown against: the median over its own
    rounds (older results: the imagefolder case's local epoch)."""
    return result.get("local_median") or rate(local_case, 2) or rate(local_case, 1)


def remount_ratio(result, after_rate, local_rate):
    """ossmount / local after a remount: the median of the rounds' own ratios when there are
    rounds (each pairs a remount epoch with a local epoch run right after it, so a drift of
    the machine's speed between rounds cancels out; a median of each side taken separately
    can pair a fast ossmount round with a slow local one), else the two rates' ratio."""
    rounds = [x for x in result.get("rounds") or [] if x.get("local")]
    if rounds:
        return statistics.median(x["ossmount"] / x["local"] for x in rounds)
    return ratio(after_rate, local_rate)


def remount_table(doc):
    out = ["| TTFB | Epoch 1 (fills --cache) files/s | GETs | Epoch 2 after remount files/s (median round) | GETs / HEADs / LISTs | Cache MiB | / local epoch (median of the rounds' ratios) |",
           "|---|---|---|---|---|---|---|"]
    loc = find(doc, "imagefolder", peer="local", workers=16)
    for c in [c for c in doc["cases"] if c["workload"] == "remount"]:
        if not ok(c):
            out.append("| %d ms | %s | | | | | |" % (c["ttfb"], failed(c)))
            continue
        b = c["result"]["before"]["epochs"][0]
        a = c["result"]["after_remount"]["epochs"][0]
        r = a["requests"]
        local = remount_local(c["result"], loc)
        out.append("| %d ms | %s | %s | %s | %s / %s / %s | %s | %s (local median %s) |" % (
            c["ttfb"], fmt(b["files_per_s"]), b["requests"].get("GET"), fmt(a["files_per_s"]),
            r.get("GET"), r.get("HEAD"), r.get("LIST"), c["result"].get("cache_mib"),
            fmt_ratio(remount_ratio(c["result"], a["files_per_s"], local)), fmt(local)))
        if c["result"].get("rounds"):
            out.append("\nRounds (remount + epoch, then the local reader, back to back): " +
                       "; ".join("%s vs %s files/s = %s (%s GETs)" % (
                           fmt(x["ossmount"]), fmt(x["local"]),
                           fmt_ratio(ratio(x["ossmount"], x["local"])), x["ossmount_gets"])
                           for x in c["result"]["rounds"]))
            dev = [x for x in c["result"]["rounds"] if x.get("dev_fuse")]
            if dev:
                out.append("\nThe same rounds over /dev/fuse (`--fuse-io-uring off`, remounted "
                           "right after the local reader): " + "; ".join(
                               "%s files/s = %s of local, %s of io_uring (daemon CPU %s s "
                               "against %s s)" % (
                                   fmt(x["dev_fuse"]), fmt_ratio(ratio(x["dev_fuse"], x["local"])),
                                   fmt_ratio(ratio(x["dev_fuse"], x["ossmount"])),
                                   x.get("dev_fuse_cpu_s"), x.get("ossmount_cpu_s"))
                               for x in dev) +
                           "; median io_uring / /dev/fuse %s" % fmt_ratio(statistics.median(
                               x["ossmount"] / x["dev_fuse"] for x in dev)))
    return "\n".join(out)


def simple_table(doc, workload, unit_key, unit, extra_label=""):
    out = ["| TTFB | Peer | %s | Seconds | GET / HEAD / LIST | Peak RSS MiB | CPU s | ossmount / peer |" % unit,
           "|---|---|---|---|---|---|---|---|"]
    for c in [c for c in doc["cases"] if c["workload"] == workload]:
        label = c["peer"] + (" (%d-file subset)" % c["limit"] if c.get("limit") else "")
        if not ok(c):
            out.append("| %d ms | %s | %s | | | | | |" % (c["ttfb"], label, failed(c)))
            continue
        res = c["result"]
        rq = res.get("requests", {})
        o = find(doc, workload, peer="ossmount", ttfb=c["ttfb"])
        r = ratio(o["result"].get(unit_key), res.get(unit_key)) if ok(o) and c["peer"] != "ossmount" else None
        out.append("| %d ms | %s | %s | %s | %s / %s / %s | %s | %s |" % (
            c["ttfb"], label, fmt(res.get(unit_key)), res.get("seconds"), rq.get("GET", "-"),
            rq.get("HEAD", "-"), rq.get("LIST", "-"), usage_cols(c), fmt_ratio(r)))
    return "\n".join(out)


def metadata_table(doc):
    out = ["| TTFB | Peer | Tool | Cold s | Cold GET / HEAD / LIST | Warm s | Warm requests | Entries | Peak RSS MiB | CPU s |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for c in [c for c in doc["cases"] if c["workload"] == "metadata"]:
        tool = {"find": "find -type f", "ls": "ls -lR", "scan": "ImageFolder scan"}[c["tool"]]
        if not ok(c):
            out.append("| %d ms | %s | %s | %s | | | | | | |" % (c["ttfb"], c["peer"], tool, failed(c)))
            continue
        cold, warm = c["result"]["cold"], c["result"]["warm"]
        cr, wr = cold["requests"], warm["requests"]
        out.append("| %d ms | %s | %s | %s | %s / %s / %s | %s | %s | %s | %s |" % (
            c["ttfb"], c["peer"], tool, cold["seconds"], cr["GET"], cr["HEAD"], cr["LIST"],
            warm["seconds"], wr["GET"] + wr["HEAD"] + wr["LIST"], fmt(cold["lines"]), usage_cols(c)))
    return "\n".join(out)


def memory_table(doc):
    c = find(doc, "memory")
    if c is None:
        return "(not run)"
    if not ok(c):
        return failed(c)
    res = c["result"]
    rq = res.get("requests", {})
    return ("| Readers | --max-memory | MB/s | Seconds | GETs (ranged) | Peak RSS MiB | CPU s |\n"
            "|---|---|---|---|---|---|---|\n| 64 threads x 16 MiB slices of 1g.bin | %d MiB | %s | %s | %s (%s) | %s |" %
            (c["max_memory_mib"], fmt(res["MB_per_s"]), res["seconds"], rq.get("GET"),
             rq.get("GET_RANGE"), usage_cols(c)))


OSS_ACCELERATOR_SEED = 2.44  # OSS Accelerator guide: ImageNet with the OSS Connector


def prefetch_table(doc):
    """Issue 5 targets and the side-by-side epoch-1 figures."""
    cases = [c for c in doc["cases"] if c["workload"] == "prefetch"]
    if not cases:
        return "(not run)\n"
    get = lambda mode, ttfb=35: rate(next(
        (c for c in cases if c["mode"] == mode and c["ttfb"] == ttfb and
         c.get("transport", "") == ""), None))
    local = rate(find(doc, "prefetch", mode="local"))
    plain35, hints35, warm35, hints12 = get("plain"), get("hints"), get("warmup"), get("hints", 12)
    r_hints = ratio(hints35, plain35)
    r_local = ratio(hints35, local)
    r_warm = ratio(warm35, plain35)
    r_accel = ratio(hints12, hints35)
    rows = ["| Target | Measured | Met |", "|---|---|---|",
            "| Epoch 1 at 35 ms, 16 workers: hints >= 4x without | %s | %s |" % (
                fmt_ratio(r_hints), mark(r_hints is not None and r_hints >= 4)),
            "| ... and >= 0.5x the local-disk reader | %s | %s |" % (
                fmt_ratio(r_local), mark(r_local is not None and r_local >= 0.5)),
            "| Epoch 1 at 35 ms with warm-up at mount time >= 3x without | %s | %s |" % (
                fmt_ratio(r_warm), mark(r_warm is not None and r_warm >= 3)),
            "| Hints on: 12 ms vs 35 ms (OSS Accelerator guide: %.2fx) | %s | (reported) |" % (
                OSS_ACCELERATOR_SEED, fmt_ratio(r_accel)),
            "",
            "| Mode | TTFB | Images | Epoch 1 files/s | GET/file | vs plain (same TTFB) | "
            "Peak RSS MiB |",
            "|---|---|---|---|---|---|---|"]
    for c in cases:
        if not ok(c):
            rows.append("| %s | %s ms | - | %s | - | - | - |" % (c["mode"], c["ttfb"], failed(c)))
            continue
        e = epoch(c, 1)
        base = get("plain", c["ttfb"]) if c["mode"] != "local" else None
        rows.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            c["mode"] + (" (/dev/fuse)" if c.get("transport") == "dev_fuse" else ""),
            "-" if c["mode"] == "local" else "%d ms" % c["ttfb"], fmt(e["files"]),
            fmt(e["files_per_s"], 1), fmt(per_file(c).get("GET"), 2),
            fmt_ratio(ratio(e["files_per_s"], base)),
            fmt((c.get("daemon") or {}).get("peak_rss_mib"))))
    return "\n".join(rows) + "\n"


def markdown(doc):
    m = doc["meta"]
    cap = doc.get("server_capacity") or {}
    parts = [
        "# ossmount benchmark %s (%s mode)\n" % (m["timestamp"], m["mode"]),
        "Commit `%s`; %s, %s cores, %s GiB, kernel %s; load average at start %s, at end %s. "
        "Daemon: %s. Server: %s.\n" % (m["commit"], m["cpu"], m["cores"], m["mem_gib"], m["kernel"],
                          " ".join(m["loadavg_start"]), " ".join(m.get("loadavg_end", ["?"])),
                          m.get("ossmount_binary", "?"), m["server"]),
        "ossmount's FUSE transport: %s.\n" % {
            "on": "io_uring rings (`--fuse-io-uring on --no-supervise`; the remount and hints "
                  "cases also measure /dev/fuse beside them)",
            "off": "/dev/fuse (`--fuse-io-uring off`; supervised, the default)"}.get(m.get("fuse_io_uring"),
                                                           "/dev/fuse (before FUSE over io_uring)"),
        "Server warmed before the cases (every image read once, unmeasured; 1g.bin read into "
        "the page cache before each sequential case): %s.\n" % json.dumps(m.get("server_warmup")),
        "## Targets (issue 4)\n", targets(doc),
        "\n## Server capacity (bench/server_capacity.sh)\n",
        cap.get("table", "(not run)") if cap else "(not run)",
        "\n## ImageFolder + DataLoader(shuffle=True), raw-bytes loader (reads every byte, returns the length)",
        imagefolder_tables(doc),
        "\n## Epoch 2 after unmount + remount with the same --cache dir (16 workers)\n",
        remount_table(doc),
        "\n## Threaded whole-file reader (16 threads, 1 MiB reads)\n",
        simple_table(doc, "threaded", "files_per_s", "files/s"),
        "\n## Sequential read of the 1 GiB object (dd bs=1M; curl: one stream)\n",
        simple_table(doc, "seqread", "MB_per_s", "MB/s"),
        "\n## Metadata: 100,000 keys in 100 directories (cold = first walk after mount)\n",
        metadata_table(doc),
        "\n## Memory bound: 64 concurrent sequential readers\n",
        memory_table(doc),
        "\n## Dataset prefetch (issue 5): epoch 1, 16 workers, hints / warm-up at mount time\n",
        prefetch_table(doc),
        "\n## Peer options\n",
        "\n".join("- %s: `%s`" % kv for kv in PEER_OPTIONS.items()),
        "- local: the same reader on bench/data/root/img/train (the generated copy)",
        "- curl: `curl --parallel --parallel-max N -K urls` over the same keys in shuffled order; "
        "single stream `curl -o /dev/null URL` for the 1 GiB object",
        "",
    ]
    return "\n".join(parts)
