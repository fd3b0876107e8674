"""Render the report page: inline CSS, inline SVG (``plots``), a few lines of inline JavaScript for
the optional search/filter box and for opening trajectories, no external resources.

Trajectory bodies are loaded on demand, so a report of hundreds of questions stays a few MB: each question's
``<details>`` holds its summary line (question, scores, failure reason) as HTML and its body (the menus of every
step) as gzip-compressed, base64-encoded HTML in the ``data-z`` attribute of its ``div.tbody``, which the page's
script decodes (the browser's ``DecompressionStream``) the first time the question is opened (about 4 KB per
heuristic question instead of about 23 KB). ``expand=True`` (``harness-g report --expand``) writes every body
as plain HTML instead, open (for printing); :func:`inline_bodies` decodes a page's bodies in Python.

Trajectories are drawn like the paper's case figures (appendix "Illustrative Trajectories"): for
each step the menu — visible sentences with their SELECT / ANSWER_WITH entries, LOOKUP entities,
ANSWER — with the chosen action highlighted and rejected alternatives greyed, then the committed set
C_T, the answer against the gold answer, and a failure reason for wrong answers.
"""
from __future__ import annotations

import base64
import datetime as _dt
import gzip
import re
from collections import Counter
from html import escape
from typing import Any, Sequence

from harness_g.agent.eval.report import CORRECT, REASONS, Run, diagnose, is_gold, parse_label
from harness_g.agent.eval.report import plots

#: summary.json keys shown in the run table, with their column headers
SUMMARY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("questions", "Questions"), ("scored", "Scored"), ("errors", "Errors"), ("em", "EM"), ("f1", "F1"), ("rs", "R-S"),
    ("ge", "G-E"), ("ge_failures", "G-E failures"), ("evidence_recall", "Evidence recall"),
    ("evidence_precision", "Evidence precision"), ("answer_in_evidence", "Answer in C_T"), ("mean_turns", "Turns"),
    ("mean_invalid_turns", "Invalid turns"), ("reachable_rate", "Reachable %"), ("mean_seconds", "s / question (all)"),
    ("mean_episode_seconds", "s / question: episode"), ("mean_reachability_seconds", "s / question: reachability"),
    ("mean_judge_seconds", "s / question: judge"),
)
ACTION_TYPES = ("SELECT", "LOOKUP", "ANSWER_WITH", "ANSWER", "INVALID")

CSS = """
:root{--ink:#1f2328;--muted:#667085;--line:#d9dde3;--soft:#f6f7f9;--chosen:#fff4c2;--chosen-line:#d4a106;--gold:#1a7f37;
--bad:#c4484e;--good:#2e7d4f;--accent:#3b6fb6}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:var(--ink);background:#fff}
main{max-width:1240px;margin:0 auto;padding:20px 24px 60px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:18px;margin:28px 0 10px;padding-bottom:4px;border-bottom:2px solid var(--line)}
h3{font-size:15px;margin:18px 0 8px} h4{font-size:13px;margin:10px 0 4px;color:var(--muted);text-transform:uppercase;letter-spacing:.03em}
.sub{color:var(--muted);font-size:12.5px}
table.data{border-collapse:collapse;font-size:12.5px;margin:6px 0 12px;width:100%}
table.data th,table.data td{border:1px solid var(--line);padding:4px 7px;text-align:right;white-space:nowrap}
table.data th{background:var(--soft);font-weight:600;white-space:normal;vertical-align:bottom}
.scroll{overflow-x:auto}
table.data td.l,table.data th.l{text-align:left;white-space:normal}
table.data tr:hover td{background:#fafbfc}
.plots{display:flex;flex-wrap:wrap;gap:18px}
.plots figure{margin:0;border:1px solid var(--line);border-radius:6px;padding:6px;background:#fff}
.plots figure{flex:1 1 440px;max-width:calc(50% - 9px)} .plots svg{width:100%;height:auto}
@media (max-width:900px){.plots figure{max-width:100%}}
.plots figcaption{font-size:11.5px;color:var(--muted);padding:2px 6px}
.controls{position:sticky;top:0;background:#fffffff0;padding:8px 0;z-index:5;display:flex;gap:12px;align-items:center;
border-bottom:1px solid var(--line)}
.controls input[type=search]{width:340px;padding:5px 8px;border:1px solid var(--line);border-radius:4px;font:inherit}
details.traj{border:1px solid var(--line);border-radius:6px;margin:6px 0;background:#fff}
details.traj>summary{cursor:pointer;padding:7px 10px;display:flex;gap:10px;align-items:baseline;list-style:none}
details.traj>summary::-webkit-details-marker{display:none}
details.traj>summary:before{content:"\\25B8";color:var(--muted)} details.traj[open]>summary:before{content:"\\25BE"}
details.traj[open]>summary{border-bottom:1px solid var(--line);background:var(--soft)}
summary .q{flex:1} summary .meta{color:var(--muted);font-size:12px;white-space:nowrap}
.badge{font-size:11px;font-weight:600;border-radius:10px;padding:1px 8px;white-space:nowrap}
.badge.ok{background:#dcf3e4;color:var(--good)} .badge.bad{background:#fbe3e4;color:var(--bad)}
.reason{font-size:11.5px;color:var(--bad);white-space:nowrap} .reason.correct{color:var(--good)}
.tbody{padding:8px 12px 12px}
.qa{display:grid;grid-template-columns:90px 1fr;gap:2px 10px;font-size:13px;margin-bottom:8px}
.qa .k{color:var(--muted)}
.step{border-left:3px solid var(--accent);margin:10px 0 12px;padding:2px 0 2px 10px}
.step-head{font-weight:600;margin-bottom:4px} .step-head code{font-weight:normal}
.fq{font-size:12.5px;margin:2px 0 6px;color:#333} .fq q{background:#eef3fb;padding:0 3px}
table.menu{border-collapse:separate;border-spacing:0 2px;width:100%;font-size:12.5px}
table.menu td{padding:3px 6px;vertical-align:top;border-top:1px solid transparent;border-bottom:1px solid transparent}
table.menu td.ref{width:34px;color:var(--muted);font-family:ui-monospace,Menlo,Consolas,monospace}
table.menu td.acts{width:250px;text-align:right;white-space:nowrap}
tr.rejected td.txt,tr.rejected td.ref{color:#8a8f98}
tr.chosen td{background:var(--chosen);border-color:var(--chosen-line)}
tr.chosen td:first-child{border-left:1px solid var(--chosen-line);border-radius:4px 0 0 4px}
tr.chosen td:last-child{border-right:1px solid var(--chosen-line);border-radius:0 4px 4px 0}
.title{font-weight:600;color:#444} tr.rejected .title{color:#8a8f98}
.chip{display:inline-block;font:11px/1.6 ui-monospace,Menlo,Consolas,monospace;border:1px solid #c9ced6;border-radius:4px;
padding:0 5px;margin-left:3px;color:#6b7280;background:#f4f5f7}
.chip.chosen{color:#000;background:#ffd84d;border-color:#b38600;font-weight:700;box-shadow:0 0 0 2px #ffe999}
.t-SELECT.chosen{background:#cfe0f7;border-color:#3b6fb6;box-shadow:0 0 0 2px #e1ebf9}
.t-LOOKUP.chosen{background:#fbe0c2;border-color:#e08a2c;box-shadow:0 0 0 2px #fdeedc}
.t-ANSWER_WITH.chosen{background:#cfead6;border-color:#4a9d5b;box-shadow:0 0 0 2px #e2f3e6}
.t-ANSWER.chosen{background:#e3dbf2;border-color:#8467b3;box-shadow:0 0 0 2px #efeaf8}
.gold-tag{display:inline-block;font-size:10px;font-weight:700;color:#fff;background:var(--gold);border-radius:3px;padding:0 4px;
margin-left:4px;vertical-align:1px}
.role{font-size:10.5px;color:var(--muted)}
.effect{font-size:12px;color:#444;margin:4px 0 0} .effect ul{margin:2px 0 0 18px;padding:0}
ol.ct{margin:2px 0 6px 20px;padding:0;font-size:12.5px} ol.ct li{margin:1px 0}
.answer-box{display:flex;gap:18px;flex-wrap:wrap;align-items:baseline;margin-top:8px;padding:6px 10px;border-radius:6px;
background:var(--soft);font-size:13px}
.answer-box .pred.ok{color:var(--good);font-weight:700} .answer-box .pred.bad{color:var(--bad);font-weight:700}
.muted{color:var(--muted)} .hidden{display:none!important}
footer{margin-top:30px;color:var(--muted);font-size:12px}
"""

SCRIPT = """
(function(){
  function load(d){
    var body=d.querySelector('div.tbody[data-z]');
    if(!body||body.getAttribute('data-state')) return;
    body.setAttribute('data-state','loading');
    if(typeof DecompressionStream==='undefined'){
      body.textContent='This browser cannot decompress the trajectory; re-run harness-g report with --expand.';
      return;
    }
    var bin=atob(body.getAttribute('data-z')), bytes=new Uint8Array(bin.length);
    for(var i=0;i<bin.length;i++) bytes[i]=bin.charCodeAt(i);
    new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'))).text().then(function(html){
      body.innerHTML=html; body.removeAttribute('data-z'); body.setAttribute('data-state','loaded');
    });
  }
  document.querySelectorAll('details.traj').forEach(function(d){
    d.addEventListener('toggle',function(){ if(d.open) load(d); });
    if(d.open) load(d);
  });
  if(location.hash==='#expand') document.querySelectorAll('details.traj').forEach(function(d){ d.open=true; load(d); });
})();
(function(){
  var box=document.getElementById('q-search'), sel=document.getElementById('q-outcome'), n=document.getElementById('q-count');
  function apply(){
    var term=(box.value||'').toLowerCase(), want=sel.value, shown=0, all=document.querySelectorAll('details.traj');
    all.forEach(function(d){
      var ok=(!term||d.getAttribute('data-search').indexOf(term)>=0)&&(want==='all'||d.getAttribute('data-outcome')===want);
      d.classList.toggle('hidden',!ok); if(ok) shown++;
    });
    n.textContent=shown+' / '+all.length+' shown';
  }
  box.addEventListener('input',apply); sel.addEventListener('change',apply); apply();
})();
"""


# -- small helpers ---------------------------------------------------------------------------------
def fmt_value(v: Any) -> str:
    """Exactly the value in summary.json (floats as Python prints them), ``—`` for missing."""
    if v is None:
        return "—"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float):
        return repr(v)
    return escape(str(v))


def _num(v: Any, digits: int = 2) -> str:
    return "—" if v is None else f"{v:.{digits}f}"


def _sentence_html(run: Run, sid: str, gold: dict[str, list[str]], *, with_title: bool = True) -> str:
    s = run.sentences.get(sid)
    tag = '<span class="gold-tag" title="gold evidence">gold</span>' if is_gold(sid, gold) else ""
    if s is None:
        return f'<code>{escape(sid)}</code>{tag}'
    title = f'<span class="title">{escape(s.title)}:</span> ' if with_title and s.title else ""
    return f"{title}{escape(s.text)}{tag}"


# -- sections --------------------------------------------------------------------------------------
def _runs_table(runs: Sequence[Run]) -> str:
    rows = []
    for i, r in enumerate(runs):
        graph = r.config.get("graph") or r.summary.get("graph") or "?"
        rows.append(f'<tr data-run="{i}"><td class="l">{i + 1}</td><td class="l">{escape(r.label)}</td>'
                    f'<td class="l">{escape(r.dataset)}</td><td class="l">{escape(r.interface)}</td><td class="l">{escape(r.policy)}</td>'
                    f'<td class="l"><code>{escape(str(r.path))}</code></td><td class="l"><code>{escape(str(graph))}</code></td></tr>')
    return ('<table class="data" id="runs"><tr><th class="l">#</th><th class="l">Run</th><th class="l">Dataset</th>'
            '<th class="l">Interface</th><th class="l">Policy</th><th class="l">Run directory</th><th class="l">Graph</th></tr>'
            + "".join(rows) + "</table>")


def _summary_table(runs: Sequence[Run]) -> str:
    cols = [(k, h) for k, h in SUMMARY_COLUMNS if any(k in r.summary for r in runs)]
    head = "".join(f'<th data-key="{k}">{escape(h)}</th>' for k, h in cols)
    rows = []
    for i, r in enumerate(runs):
        cells = "".join(f'<td data-run="{i}" data-key="{k}">{fmt_value(r.summary.get(k))}</td>' for k, _ in cols)
        rows.append(f'<tr><td class="l">{escape(r.dataset)}</td><td class="l">{escape(r.interface)}</td>'
                    f'<td class="l">{escape(r.policy)}</td>{cells}</tr>')
    return (f'<div class="scroll"><table class="data" id="summary"><tr><th class="l">Dataset</th><th class="l">Interface</th>'
            f'<th class="l">Policy</th>{head}</tr>' + "".join(rows) + "</table></div>"
            '<p class="sub">EM, F1, R-S, G-E, evidence recall/precision and answer-in-C_T are macro averages ×100 over scored '
            'questions (summary.json). R-S (retrieval similarity) = cosine between the mean embedding of the evidence the '
            'episode retrieved and that of the gold evidence (harness-g.tex, "Evaluation Details"); G-E = 10/7·Σ of seven '
            '0–10 judge scores, only when a judge was configured. Seconds per question: "all" is the wall time of everything '
            'the run did for a question (episode, scoring, judge, reachability search); "episode" the policy and '
            'environment alone; "reachability" the reachability search (eval --reachability).</p>')


def _pivot_table(runs: Sequence[Run]) -> str:
    datasets = list(dict.fromkeys(r.dataset for r in runs))
    columns = list(dict.fromkeys(f"{r.interface} · {r.policy}" for r in runs))
    cell: dict[tuple[str, str], Run] = {}
    for r in runs:
        cell.setdefault((r.dataset, f"{r.interface} · {r.policy}"), r)
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    rows = []
    for d in datasets:
        tds = []
        for c in columns:
            r = cell.get((d, c))
            if r is None:
                tds.append('<td class="muted">—</td>')
            else:
                tds.append(f'<td data-dataset="{escape(d)}" data-column="{escape(c)}">{fmt_value(r.summary.get("f1"))} / '
                           f'{fmt_value(r.summary.get("em"))}</td>')
        rows.append(f'<tr><td class="l">{escape(d)}</td>{"".join(tds)}</tr>')
    return (f'<table class="data" id="pivot"><tr><th class="l">F1 / EM</th>{head}</tr>' + "".join(rows) + "</table>")


def _series_name(r: Run, runs: Sequence[Run]) -> str:
    base = f"{r.interface} · {r.policy}"
    dup = sum(1 for o in runs if o.dataset == r.dataset and f"{o.interface} · {o.policy}" == base) > 1
    return f"{base} ({r.path.name})" if dup else base


def _turns_figure(runs: Sequence[Run]) -> tuple[str, str]:
    """Histogram of decision turns per question, one series per run (runs without steps left out): (svg, caption)."""
    # turns histogram (runs that take decision steps; rag / naive answer in 0 turns and are left out)
    stepped = [r for r in runs if any((rec.get("trajectory") or {}).get("steps") for rec in r.scored)] or list(runs)
    max_t = max((int((rec.get("metrics") or {}).get("turns") or 0) for r in stepped for rec in r.scored), default=0)
    groups = [str(t) for t in range(max_t + 1)]
    tvals: dict[tuple[str, str], float | None] = {}
    for r in stepped:
        c = Counter(int((rec.get("metrics") or {}).get("turns") or 0) for rec in r.scored)
        for g in groups:
            tvals[(g, r.label)] = float(c.get(int(g), 0))
    left_out = [r.label for r in runs if r not in stepped]
    return (plots.grouped_bars("Turns per question", groups, [r.label for r in stepped], tvals, y_label="questions",
                               cls="plot-turns", integer=True),
            "Decision turns per episode (invalid replies count)."
            + (f" Not shown (0 turns by design): {', '.join(left_out)}." if left_out else ""))


def _outcome_figure(runs: Sequence[Run]) -> tuple[str, str]:
    """Share of correct answers and of each diagnosed failure reason per run: (svg, caption)."""
    outcome_cats = [CORRECT, *REASONS]
    oc = {(r.label, d): 0.0 for r in runs for d in outcome_cats}
    for r in runs:
        for rec in r.scored:
            d = diagnose(rec, r.gold.get(str(rec["id"]), {}), r.interface)
            oc[(r.label, d)] = oc.get((r.label, d), 0.0) + 1
    used = [c for c in outcome_cats if any(oc.get((r.label, c), 0) for r in runs)]
    reason_colors = {CORRECT: "#2e7d4f", "gold not reachable": "#7a7a7a", "gold visible but not committed": "#e08a2c",
                     "wrong answer string": "#c4484e", "part of the gold never surfaced": "#b39ddb",
                     "gold never surfaced": "#8467b3", "no retrieval (naive)": "#b5b23a",
                     "no gold evidence annotated": "#bbbbbb"}
    return (plots.stacked_shares("Outcome and failure reason", [r.label for r in runs], used or [CORRECT], oc,
                                 colors=reason_colors, cls="plot-reasons"),
            "Correct = EM 1; wrong answers by diagnosed reason (see the trajectories).")


def _reachability_figures(runs: Sequence[Run]) -> list[tuple[str, str]]:
    """One reachability × outcome grid per run that recorded reachability: [(svg, caption)]."""
    figs: list[tuple[str, str]] = []
    for r in runs:
        reach = [rec for rec in r.scored if rec.get("reachability")]
        if not reach:
            continue
        rows = ["reachable", "unreachable", "unknown", "no_gold"]
        grid: Counter = Counter()
        for rec in reach:
            ok = "correct" if (rec.get("metrics") or {}).get("em") == 1 else "wrong"
            grid[(rec["reachability"]["status"], ok)] += 1
        rows = [x for x in rows if any(grid.get((x, c)) for c in ("correct", "wrong"))] or ["reachable"]
        figs.append((plots.count_grid(f"Reachability × outcome: {r.label}", rows, ["correct", "wrong"], dict(grid),
                                      width=420, cls="plot-reach", row_title="menu reachability", col_title="answer (EM)"),
                     "Questions by menu reachability of the gold evidence (eval --reachability) and answer correctness."))
    return figs


def _plots(runs: Sequence[Run]) -> str:
    figs: list[tuple[str, str]] = []
    datasets = list(dict.fromkeys(r.dataset for r in runs))
    series = list(dict.fromkeys(_series_name(r, runs) for r in runs))
    for key, name in (("f1", "F1"), ("em", "EM")):
        vals = {(r.dataset, _series_name(r, runs)): r.summary.get(key) for r in runs}
        figs.append((plots.grouped_bars(f"{name} by dataset", datasets, series, vals, y_max=100, y_label=name, cls=f"plot-{key}"),
                     f"{name} (×100) per dataset; one bar per interface · policy."))
    figs.append(_turns_figure(runs))
    # action mix
    counts = {(r.label, t): float((r.summary.get("action_mix") or {}).get(t, 0)) for r in runs for t in ACTION_TYPES}
    figs.append((plots.stacked_shares("Action-type mix", [r.label for r in runs], list(ACTION_TYPES), counts,
                                      colors=plots.ACTION_COLORS, cls="plot-actions"),
                 "Share of executed action types over all steps (summary.json action_mix)."))
    figs.append(_outcome_figure(runs))
    figs += _reachability_figures(runs)
    if not any(rec.get("reachability") for r in runs for rec in r.scored):
        note = '<p class="sub">No reachability in these runs (run <code>harness-g eval --reachability</code> to add the reachability × outcome plot).</p>'
    else:
        note = ""
    return ('<div class="plots">' + "".join(f"<figure>{svg}<figcaption>{escape(cap)}</figcaption></figure>" for svg, cap in figs)
            + "</div>" + note)


# -- trajectories ----------------------------------------------------------------------------------
def _chip(action: dict[str, Any], chosen: str | None, refs: str = "") -> str:
    """One action as a chip ``A3 SELECT``; ``refs`` (e.g. "S0 S2") is appended for actions with several targets."""
    state = "chosen" if action["id"] == chosen else "rejected"
    text = f'{action["id"]} {action["type"]}' + (f" {refs}" if refs else "")
    return (f'<span class="chip t-{escape(action["type"])} {state}" data-action="{escape(action["id"])}" '
            f'title="{escape(action.get("label", ""))}">{escape(text)}</span>')


def _menu_rows(run: Run, menu: list[dict[str, Any]], chosen: str | None, gold: dict[str, list[str]]) -> list[str]:
    """The menu as table rows (``<tr>`` strings): one per visible sentence, then per LOOKUP entity, then one for the
    several-sentence ANSWER_WITH actions, then ANSWER; each row's action chips, the chosen one highlighted."""
    # group the menu's actions by target row: visible sentences, entities, then ANSWER
    sentence_rows: dict[str, dict[str, Any]] = {}
    entity_rows: dict[str, dict[str, Any]] = {}
    stop: list[dict[str, Any]] = []
    several: list[dict[str, Any]] = []  # ANSWER_WITH(s_1..s_k), k > 1: one row of its own, each action drawn once
    for a in menu:
        lab = parse_label(a.get("label", ""))
        if a["type"] == "ANSWER_WITH" and len(a.get("targets") or []) > 1:
            several.append(a)
        elif a["type"] in ("SELECT", "ANSWER_WITH"):
            for t, ref in zip(a.get("targets") or [], (lab["refs"] or "").split() or [""]):
                row = sentence_rows.setdefault(t, {"ref": ref, "actions": []})
                row["ref"] = row["ref"] or ref
                row["actions"].append(a)
        elif a["type"] == "LOOKUP":
            t = (a.get("targets") or [""])[0]
            row = entity_rows.setdefault(t, {"ref": lab["refs"], "surface": lab["entity"] or t, "actions": []})
            row["actions"].append(a)
        else:
            stop.append(a)
    rows = []
    for sid, row in sentence_rows.items():
        is_chosen = any(a["id"] == chosen for a in row["actions"])
        cls = "row sentence " + ("chosen" if is_chosen else "rejected") + (" gold" if is_gold(sid, gold) else "")
        rows.append(f'<tr class="{cls}" data-target="{escape(sid)}"><td class="ref">{escape(row["ref"])}</td>'
                    f'<td class="txt">{_sentence_html(run, sid, gold)}</td>'
                    f'<td class="acts">{"".join(_chip(a, chosen) for a in row["actions"])}</td></tr>')
    for eid, row in entity_rows.items():
        is_chosen = any(a["id"] == chosen for a in row["actions"])
        cls = "row entity " + ("chosen" if is_chosen else "rejected")
        rows.append(f'<tr class="{cls}" data-target="{escape(eid)}"><td class="ref">{escape(row["ref"])}</td>'
                    f'<td class="txt">entity: <b>{escape(row["surface"])}</b></td>'
                    f'<td class="acts">{"".join(_chip(a, chosen) for a in row["actions"])}</td></tr>')
    if several:
        is_chosen = any(a["id"] == chosen for a in several)
        cls = "row several " + ("chosen" if is_chosen else "rejected")
        chips = "".join(_chip(a, chosen, " ".join(parse_label(a.get("label", ""))["refs"].split())) for a in several)
        rows.append(f'<tr class="{cls}"><td class="ref"></td><td class="txt"><i>commit several visible sentences and '
                    f'stop</i></td><td class="acts">{chips}</td></tr>')
    for a in stop:
        cls = "row stop " + ("chosen" if a["id"] == chosen else "rejected")
        rows.append(f'<tr class="{cls}"><td class="ref"></td><td class="txt"><i>stop and answer from C_t</i></td>'
                    f'<td class="acts">{_chip(a, chosen)}</td></tr>')
    return rows


def _step_head(step: dict[str, Any], menu: list[dict[str, Any]], chosen: str | None, turn: int, max_turns: int,
               fq: dict[str, Any] | None) -> str:
    """A step's heading: the turn and the chosen action, or the invalid reply and its error."""
    if chosen is None:
        head = (f'Turn {turn + 1}/{max_turns} · <span style="color:var(--bad)">invalid reply</span> '
                f'<code>{escape(str(step.get("reply", ""))[:200])}</code> — {escape(step.get("error") or "")}')
    else:
        label = next((a.get("label", "") for a in menu if a["id"] == chosen), chosen)
        head = f'Turn {turn + 1}/{max_turns} · chose <span class="chip t-{escape(step.get("action_type") or "")} chosen">{escape(label)}</span>'
        if fq is None and str(step.get("reply", "")).strip() != chosen:
            head += f' <span class="sub">reply <code>{escape(str(step.get("reply", ""))[:120])}</code></span>'
    return head


def _free_query_html(fq: dict[str, Any] | None) -> str:
    """A free-query step's query, the entity it resolved to and its cosine (and the runner-up); "" for menu steps."""
    fq_html = ""
    if fq is not None:
        ru = fq.get("runner_up")
        ru_txt = f"; runner-up {escape(str(ru[0]))} ({float(ru[1]):.3f})" if ru else ""
        fq_html = (f'<div class="fq">free query <q>{escape(str(fq.get("query", "")))}</q> → resolved to '
                   f'<b>{escape(str(fq.get("resolved")))}</b> (cos {float(fq.get("score", 0.0)):.3f}{ru_txt})</div>')
    return fq_html


def _step_effect(run: Run, step: dict[str, Any], chosen: str | None, gold: dict[str, list[str]]) -> str:
    """What the chosen action did: the sentences a LOOKUP surfaced or a SELECT / ANSWER_WITH committed ("" else)."""
    effect = ""
    intro = step.get("introduced") or []
    if chosen is not None and step.get("action_type") == "LOOKUP":
        items = "".join(f"<li>{_sentence_html(run, s, gold)}</li>" for s in intro)
        effect = f'<div class="effect">→ LOOKUP surfaced {len(intro)} sentence(s) for the next menu:<ul>{items}</ul></div>'
    elif chosen is not None and step.get("action_type") in ("SELECT", "ANSWER_WITH") and intro:
        effect = f'<div class="effect">→ committed: {"; ".join(_sentence_html(run, s, gold) for s in intro)}</div>'
    return effect


def _step_html(run: Run, step: dict[str, Any], gold: dict[str, list[str]], max_turns: int, fq: dict[str, Any] | None) -> str:
    chosen = step.get("chosen")
    menu = step.get("menu") or []
    rows = _menu_rows(run, menu, chosen, gold)
    turn = int(step.get("turn", 0))
    head = _step_head(step, menu, chosen, turn, max_turns, fq)
    fq_html = _free_query_html(fq)
    effect = _step_effect(run, step, chosen, gold)
    return (f'<div class="step" data-turn="{turn}" data-chosen="{escape(chosen or "")}"><div class="step-head">{head}</div>'
            f'{fq_html}<table class="menu">{"".join(rows)}</table>{effect}</div>')


def _error_html(rec: dict[str, Any], qid: str, ri: int) -> str:
    """A failed question's entry: its question and the error, no trajectory."""
    return (f'<details class="traj" data-run="{ri}" data-qid="{escape(qid)}" data-outcome="error" '
            f'data-search="{escape(str(rec.get("question", "")).lower())}"><summary><span class="badge bad">error</span>'
            f'<span class="q">{escape(str(rec.get("question", "")))}</span></summary>'
            f'<div class="tbody"><p>{escape(str(rec["error"]))}</p></div></details>')


def _retrieval_parts(run: Run, t: dict[str, Any], retrieved: list[dict[str, Any]] | None,
                     gold: dict[str, list[str]]) -> list[str]:
    """The retrieved chunks of a rag episode, or the note that a naive one retrieved nothing ([] else)."""
    parts: list[str] = []
    if retrieved:
        parts.append(f"<h4>Retrieved chunks (top {len(retrieved)} paragraphs by the encoder)</h4>")
        for i, c in enumerate(retrieved):
            sents = "".join(f"<li>{_sentence_html(run, s, gold, with_title=False)}</li>" for s in c.get("sentence_ids") or [])
            parts.append(f'<div class="step chunk"><div class="step-head">#{i + 1} {escape(str(c.get("title", "")))} '
                         f'<span class="sub">score {float(c.get("score", 0)):.3f}</span></div><ol class="ct">{sents}</ol></div>')
    elif run.interface == "naive" or t.get("terminated_by") == "naive":
        parts.append('<p class="muted">Naive generation: no retrieval, the answer sees the question only.</p>')
    return parts


def _judge_and_reach_notes(rec: dict[str, Any]) -> list[str]:
    """Notes under the answer: the G-E judge's scores (or its failure) and the menu reachability, where recorded."""
    parts: list[str] = []
    if rec.get("judge"):
        j = rec["judge"]
        if "scores" in j:
            sc = ", ".join(f"{escape(k)} {v:g}" for k, v in j["scores"].items())
            parts.append(f'<p class="sub">G-E {float(j.get("ge", 0)):.1f} ({escape(str(j.get("model", "")))}: {sc})</p>')
        else:
            parts.append(f'<p class="sub">G-E judge failed: {escape(str(j.get("error", "")))}</p>')
    if rec.get("reachability"):
        rch = rec["reachability"]
        parts.append(f'<p class="sub">menu reachability: {escape(str(rch.get("status")))}'
                     + (f' (min {rch["min_turns"]} turns)' if rch.get("min_turns") is not None else "") + "</p>")
    return parts


def _trajectory_html(run: Run, rec: dict[str, Any], ri: int, expand: bool = False) -> str:
    qid = str(rec.get("id"))
    gold = run.gold.get(qid, {})
    if "error" in rec:
        return _error_html(rec, qid, ri)
    t = rec.get("trajectory") or {}
    m = rec.get("metrics") or {}
    reason = diagnose(rec, gold, run.interface)
    ok = reason == CORRECT
    em, f1 = m.get("em"), m.get("f1")
    max_turns = int((t.get("env_config") or {}).get("max_turns") or 0) or len(t.get("steps") or [])
    answers = rec.get("answers") or []
    pred = rec.get("prediction") or ""
    search = " ".join([str(rec.get("question", "")), pred, *answers, qid]).lower()
    fq_by_turn = {int(x.get("turn", -1)): x for x in (t.get("meta") or {}).get("free_query") or []}
    parts = [f'<div class="qa"><span class="k">Question</span><span>{escape(str(rec.get("question", "")))}</span>'
             f'<span class="k">Gold</span><span>{escape(" | ".join(answers)) or "—"}</span>'
             f'<span class="k">Question id</span><span><code>{escape(qid)}</code></span></div>']
    steps = t.get("steps") or []
    if steps:
        parts.append("<h4>Menus (chosen action highlighted; rejected alternatives greyed)</h4>")
        parts += [_step_html(run, s, gold, max_turns, fq_by_turn.get(int(s.get("turn", -1))) if fq_by_turn else None) for s in steps]
    retrieved = (t.get("meta") or {}).get("retrieved")
    parts += _retrieval_parts(run, t, retrieved, gold)
    committed = t.get("committed") or []
    if not retrieved and (steps or committed):
        items = "".join(f"<li>{_sentence_html(run, s, gold)}</li>" for s in committed)
        parts.append(f'<h4>Committed set C_T ({len(committed)})</h4>'
                     + (f'<ol class="ct">{items}</ol>' if committed else '<p class="muted">(empty)</p>'))
    ended = t.get("terminated_by") or ""
    parts.append(f'<div class="answer-box"><span>Answer: <span class="pred {"ok" if ok else "bad"}">{escape(pred) or "(empty)"}</span></span>'
                 f'<span>Gold: <b>{escape(" | ".join(answers)) or "—"}</b></span><span>EM {_num(em, 0)} · F1 {_num(f1)}</span>'
                 f'<span class="muted">ended by {escape(ended)} · {len(steps)} turn(s)</span>'
                 f'<span class="reason {"correct" if ok else ""}">{escape(reason)}</span></div>')
    parts += _judge_and_reach_notes(rec)
    badge = f'<span class="badge {"ok" if ok else "bad"}">EM {_num(em, 0)} · F1 {_num(f1)}</span>'
    return (f'<details class="traj"{" open" if expand else ""} data-run="{ri}" data-qid="{escape(qid)}" data-outcome="{"correct" if ok else "wrong"}" '
            f'data-reason="{escape(reason)}" data-search="{escape(search)}"><summary>{badge}'
            f'<span class="q">{escape(str(rec.get("question", "")))}</span>'
            f'<span class="reason {"correct" if ok else ""}">{escape(reason)}</span>'
            f'<span class="meta">{len(steps)} turn(s) · {len(committed)} in C_T</span></summary>'
            f'{_body("".join(parts), lazy=not expand)}</details>')


def _body(html: str, *, lazy: bool) -> str:
    """A trajectory's ``div.tbody``: ``html`` itself, or (``lazy``) gzip + base64 in ``data-z``, decoded by the page's
    script when the question is first opened."""
    if not lazy:
        return f'<div class="tbody">{html}</div>'
    packed = base64.b64encode(gzip.compress(html.encode("utf-8"), compresslevel=9, mtime=0)).decode("ascii")
    return f'<div class="tbody" data-z="{packed}"></div>'


_LAZY_BODY = re.compile(r'<div class="tbody" data-z="([A-Za-z0-9+/=]*)"></div>')


def inline_bodies(page: str) -> str:
    """``page`` with every lazily loaded trajectory body decoded in place: the HTML a reader's browser shows once
    every question is opened (what ``expand=False`` pages hold compressed)."""
    return _LAZY_BODY.sub(lambda m: f'<div class="tbody">{gzip.decompress(base64.b64decode(m.group(1))).decode("utf-8")}</div>', page)


def _trajectories(runs: Sequence[Run], max_questions: int | None, expand: bool = False) -> str:
    out = ['<div class="controls"><input type="search" id="q-search" placeholder="search questions, answers, ids…" '
           'aria-label="search"><select id="q-outcome" aria-label="outcome"><option value="all">all</option>'
           '<option value="correct">correct</option><option value="wrong">wrong</option></select>'
           '<span id="q-count" class="sub"></span></div>']
    for ri, r in enumerate(runs):
        recs = r.records if max_questions is None else r.records[:max_questions]
        more = "" if len(recs) == len(r.records) else f' <span class="sub">(first {len(recs)} of {len(r.records)})</span>'
        out.append(f'<section class="run-traj" data-run="{ri}"><h3>{escape(r.label)}{more}</h3>')
        out += [_trajectory_html(r, rec, ri, expand) for rec in recs]
        out.append("</section>")
    return "".join(out)


def render_report(runs: Sequence[Run], *, title: str = "harness-g evaluation report", max_questions: int | None = None,
                  expand: bool = False) -> str:
    """The whole page. ``expand``: trajectories start open (for printing / screenshots)."""
    now = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    body = [
        f"<h1>{escape(title)}</h1>",
        f'<div class="sub">{len(runs)} run(s) · {sum(len(r.records) for r in runs)} question record(s) · generated {now}</div>',
        "<h2>Runs</h2>", _runs_table(runs),
        "<h2>Summary metrics</h2>", _summary_table(runs),
        "<h3>F1 / EM by dataset and interface</h3>", _pivot_table(runs),
        "<h2>Plots</h2>", _plots(runs),
        "<h2>Trajectories</h2>",
        '<p class="sub">One section per question. Each step lists the menu the policy saw: visible sentences with their '
        'SELECT / ANSWER_WITH entries, LOOKUP entities, and ANSWER. The executed action is highlighted; rejected '
        'alternatives are greyed; <span class="gold-tag">gold</span> marks gold evidence.</p>',
        _trajectories(runs, max_questions, expand),
        '<footer>harness-g report · self-contained page (inline CSS and SVG)</footer>',
    ]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{escape(title)}</title><style>{CSS}</style></head><body><main>{''.join(body)}</main>"
            f"<script>{SCRIPT}</script></body></html>\n")
