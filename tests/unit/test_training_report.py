"""`harness-g report RUN_DIR` on a training run draws its curves (inline SVG) and the before/after table."""
import json
from html.parser import HTMLParser

from harness_g.cli import main


class _Counter(HTMLParser):
    def __init__(self):
        super().__init__()
        self.svgs, self.polylines, self.titles = 0, 0, []
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        self.svgs += tag == "svg"
        self.polylines += tag == "polyline"
        self._in_title = tag == "h1"

    def handle_data(self, data):
        if self._in_title:
            self.titles.append(data)
            self._in_title = False


def _write_run(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("seed: 0\n")
    rows = [{"step": s, "reward_f1": 0.1 * s, "em": 0.0, "loss": 1.0 / s, "pg_loss": 0.5 / s, "kl": 0.001 * s, "grad_norm": 2.0,
             "time_generate_s": 3.0, "time_env_s": 1.0, "time_snc_s": 0.4, "time_update_s": 2.0, "time_total_s": 6.4,
             "snc_share": 0.06} for s in (1, 2, 3)]
    rows.append({**rows[1], "reward_f1": 0.9})  # a resumed run re-logs step 2: the latest row wins
    (run / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (run / "eval.jsonl").write_text(json.dumps({"tag": "before", "step": 0, "split": "heldout", "questions": 4, "f1": 0.05,
                                                "em": 0.0, "turns": 2.0, "invalid_action_frac": 0.0}) + "\n")
    return run


def test_training_run_report(tmp_path, capsys):
    run = _write_run(tmp_path)
    out = tmp_path / "r.html"
    assert main(["report", str(run), "--out", str(out)]) == 0
    html = out.read_text()
    parsed = _Counter()
    parsed.feed(html)
    assert parsed.svgs >= 5 and parsed.polylines >= 5
    assert parsed.titles == ["harness-g training run"]
    assert "step 2: 0.9" in html  # deduplicated by step, latest kept
    assert "<td>before</td>" in html and "<td>5.00</td>" in html  # F1 0.05 shown ×100


def test_several_training_runs_get_a_page_each(tmp_path, capsys):
    first = _write_run(tmp_path)
    second = tmp_path / "other"
    (tmp_path / "x").mkdir()
    _write_run(tmp_path / "x").rename(second)
    out = tmp_path / "r.html"
    assert main(["report", str(first), str(second), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    for name in ("run", "other"):
        page = tmp_path / f"r-train-{name}.html"
        assert f"report: {page}" in printed and "<polyline" in page.read_text()
    assert not out.exists()  # no eval runs: nothing goes to --out itself


def test_curve_ticks_are_round_and_keep_their_minus_sign() -> None:
    from harness_g.agent.eval.report.plots import nice_ticks, tick_label
    from harness_g.training.curves import line_chart

    assert nice_ticks(-0.042, 0.31) == [-0.1, 0.0, 0.1, 0.2, 0.3, 0.4]
    assert nice_ticks(0, 1.0) == [0.0, 0.25, 0.5, 0.75, 1.0] and nice_ticks(1, 120) == [0, 50, 100, 150]
    assert [tick_label(v) for v in (-0.05, 0.0, 2.5, 1500.0)] == ["\u22120.05", "0", "2.5", "1,500"]
    svg = line_chart("Retrieval-equivalence: D_query (free-query arm), D_ret, mean N_eq, and a long tail",
                     [1, 2, 3], {"loss": [-0.0421, 0.013, 0.2]})
    assert ">\u22120.1<" in svg and ">0.0421<" not in svg and "0.2<" in svg  # round labels, the minus kept
    title_size = int(svg.split('font-size="')[1].split('"')[0])
    assert title_size < 13  # a long title is shrunk to the chart's width, not cut
