"""The table, as text for the terminal and as Markdown for build/compat.md (and the README)."""

from __future__ import annotations

from compat.runner import Cell, Report

__all__ = ["markdown", "text"]

WORD = {"pass": "pass", "differs": "DIFFERS", "error": "ERROR", "unsupported": "unsupported", "skipped": "skipped"}


def _word(c: Cell) -> str:
    if c.known and c.status in ("differs", "error"):
        return f"known ({c.status})"
    return WORD.get(c.status, c.status)


def _grid(report: Report) -> tuple[list[str], list[list[str]]]:
    brokers = list(report.brokers)
    header = ["scenario"] + [f"{client} @ {broker}" for broker in brokers for client in report.clients]
    cells = {(c.scenario, c.client, c.broker): c for c in report.cells}
    body = []
    for s in report.scenarios:
        row = [s]
        for broker in brokers:
            for client in report.clients:
                c = cells.get((s, client, broker))
                row.append(_word(c) if c else "")
        body.append(row)
    return header, body


def _summary_lines(report: Report) -> list[str]:
    lines = []
    counts: dict[str, int] = {}
    for c in report.cells:
        counts[_word(c)] = counts.get(_word(c), 0) + 1
    lines.append(", ".join(f"{n} {w}" for w, n in sorted(counts.items())) + f"; {report.seconds:.0f} s")
    for name, b in report.brokers.items():
        lines.append(f"{name}: " + (f"{b['bootstrap']} {b.get('note') or ''}".strip() if b.get("available")
                                    else f"not available: {b.get('reason')}"))
        if b.get("log"):  # some of its cells errored: the end of its own log (warnings and errors)
            lines.append(f"{name}'s log, as the run ended:\n{b['log']}")
    conf = report.conformance
    if conf:  # which kafka-clients checked how many pairs (4.x, and 3.9 for what KIP-896 removed from 4.x)
        by = conf.get("pairs_checked_by") or {conf.get("kafka_clients"): conf["pairs_checked"]}
        lines.append(f"wire conformance: {conf['pairs_checked']} pairs checked / {conf['pairs_advertised']} pairs "
                     f"advertised (kafka-clients {', '.join(f'{v}: {n}' for v, n in by.items())})")
    else:
        lines.append("wire conformance: not run (build/conformance.json is written by "
                     "tests/conformance/wire/test_conformance.py)")
    if report.quick:
        lines.append("--quick: scenarios with several rebalances left out on brokers with slow group joins")
    return lines


def text(report: Report, *, details: bool = True) -> str:
    header, body = _grid(report)
    # one table per broker keeps the lines short
    out = []
    per = len(report.clients)
    for i, broker in enumerate(report.brokers):
        if not report.brokers[broker].get("available"):
            out += [f"== {broker}: skipped, {report.brokers[broker].get('reason')}", ""]
            continue
        cols = [0] + list(range(1 + i * per, 1 + (i + 1) * per))
        hdr = [header[0]] + [report.clients[j] for j in range(per)]
        rows = [[r[c] for c in cols] for r in body]
        widths = [max(len(x) for x in col) for col in zip(hdr, *rows, strict=False)]
        out.append(f"== {broker}")
        out.append("  ".join(h.ljust(w) for h, w in zip(hdr, widths, strict=True)))
        out.extend("  ".join(x.ljust(w) for x, w in zip(r, widths, strict=True)) for r in rows)
        out.append("")
    out.extend(_summary_lines(report))
    if details:
        for c in report.cells:
            if c.failing:  # the listed ones have their reasons in OUT.md and KNOWN_DIFFERENCES.md
                tag = "NOT LISTED in compat/KNOWN_DIFFERENCES.md"
                out.append(f"\n-- {c.scenario} / {c.client} / {c.broker}: {c.status} ({tag})")
                out.extend(f"   {d}" for d in c.diff[:12])
                if c.status == "error":
                    out.append("   " + c.detail.strip().splitlines()[-1][:300] if c.detail.strip() else "")
        for s in report.stale_known:
            out.append(f"\nstale: {s}")
    return "\n".join(out)


def markdown(report: Report) -> str:
    out = [f"# Compatibility: {', '.join(report.brokers)}", "",
           f"Run {report.started}. Reference: real Kafka where the run had it, otherwise each scenario's "
           f"written expectation (compat/scenarios.py). Listed differences: compat/KNOWN_DIFFERENCES.md.", ""]
    for line in _summary_lines(report):
        out.append(f"- {line}")
    for i, broker in enumerate(report.brokers):
        header, body = _grid(report)
        per = len(report.clients)
        if not report.brokers[broker].get("available"):
            out += ["", f"## {broker}", "", f"Skipped: {report.brokers[broker].get('reason')}"]
            continue
        cols = [0] + list(range(1 + i * per, 1 + (i + 1) * per))
        out += ["", f"## {broker}", "", "| scenario | " + " | ".join(report.clients) + " |",
                "|---" * (per + 1) + "|"]
        out += ["| " + " | ".join(r[c] for c in cols) + " |" for r in body]
    notes: dict[str, list[str]] = {}
    for c in report.cells:
        if c.status in ("differs", "error", "unsupported"):
            why = c.known or (c.diff[0] if c.diff else c.detail.strip().splitlines()[-1] if c.detail.strip() else "")
            if c.status == "unsupported" or c.known:
                notes.setdefault(f"{_word(c)}: {why}", []).append(f"{c.scenario} / {c.client} / {c.broker}")
            else:
                notes.setdefault(f"{_word(c)} (NOT LISTED): {why[:300]}", []).append(
                    f"{c.scenario} / {c.client} / {c.broker}")
    if notes:
        out += ["", "## Why", ""]
        for why, where in notes.items():
            shown = ", ".join(where[:6]) + (f" and {len(where) - 6} more" if len(where) > 6 else "")
            out.append(f"- {why} ({shown})")
    return "\n".join(out) + "\n"
