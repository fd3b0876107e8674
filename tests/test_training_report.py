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


def test_mixing_training_and_eval_runs_is_refused(tmp_path, capsys):
    run = _write_run(tmp_path)
    other = tmp_path / "eval"
    other.mkdir()
    (other / "records.jsonl").write_text("")
    assert main(["report", str(run), str(other), "--out", str(tmp_path / "x.html")]) == 2
    assert "not both" in capsys.readouterr().err
