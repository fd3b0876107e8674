"""Policies and the agent commands (`harness-g ask`, `harness-g menu`) on the real HotpotQA test graph.

CLI commands run in-process through ``harness_g.cli.main`` (the same code path as the console
script, minus interpreter start-up); they reuse the session's embedded FalkorDB server.
"""
from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness_g.agent.env import MenuEnv
from harness_g.agent.env.actions import ActionType
from harness_g.agent.env.config import EnvConfig
from harness_g.agent.env.trajectory import load_jsonl
from harness_g.agent.eval import metrics as M
from harness_g.agent.eval.runner import run_episode
from harness_g.agent.policies import POLICIES, make_policy
from harness_g.agent.policies.human import HumanPolicy
from harness_g.cli import main
from harness_g.errors import ConfigError
from harness_g.graph.types import QAItem

# answerable extractively from one committed sentence of the graph ("Søren Peder Lauritz Sørensen ...
# was a Danish chemist, famous for the introduction of the concept of pH")
ADHOC = QAItem("adhoc-ph", "Who was the Danish chemist famous for the concept of pH?", ("S. P. L. Sørensen", "Søren Peder Lauritz Sørensen"), "")


# -- heuristic policy ----------------------------------------------------------------------------
def test_heuristic_policy_runs_every_question(hotpot_view, hotpot_questions) -> None:
    policy = make_policy("heuristic")
    env = MenuEnv(hotpot_view)
    f1s = {}
    for item in hotpot_questions:
        traj = run_episode(env, policy, item)
        assert isinstance(traj.answer, str) and traj.answer
        assert traj.terminated_by in ("ANSWER", "ANSWER_WITH", "max_turns")
        assert 1 <= traj.turns <= env.config.max_turns and traj.invalid_turns == 0
        assert traj.committed and traj.meta["policy"] == "heuristic"
        assert set(traj.seconds) >= {"reset", "policy", "env", "total"}
        f1s[item.id] = M.token_f1(traj.answer, item.answers)
    # On these 6 bridge questions the extractive heuristic picks a wrong mention every time (e.g.
    # 'Cartagena' for 'Murcia'); F1 > 0 is checked on a one-hop question below.
    assert len(f1s) == 6

    traj = run_episode(env, policy, ADHOC)
    assert M.token_f1(traj.answer, ADHOC.answers) > 0
    assert M.exact_match(traj.answer, ADHOC.answers) == 1.0


def test_heuristic_yes_no_and_empty_evidence(hotpot_view) -> None:
    policy = make_policy("heuristic")
    env = MenuEnv(hotpot_view)
    traj = run_episode(env, policy, QAItem("yn", "Was Carsten Olsen a Danish plant ecologist?", ("yes",), ""))
    assert traj.answer == "yes"
    env.reset(QAItem("e", "Who?", (), ""))
    env.step(env.menu.actions[-1].id)  # ANSWER at once: nothing committed
    assert policy.answer("Who?", env.committed_texts(), env.observe()) == ""


def test_heuristic_single_turn_without_answer_with(hotpot_view) -> None:
    # one turn and no ANSWER_WITH on the menu: the heuristic SELECTs and the budget ends the episode
    env = MenuEnv(hotpot_view, EnvConfig(max_turns=1, answer_with=False))
    traj = run_episode(env, make_policy("heuristic"), ADHOC)
    assert traj.terminated_by == "max_turns" and traj.steps[0].action_type == "SELECT" and len(traj.committed) == 1
    # with ANSWER_WITH offered, the single turn commits and answers at once
    traj = run_episode(MenuEnv(hotpot_view, EnvConfig(max_turns=1)), make_policy("heuristic"), ADHOC)
    assert traj.terminated_by == "ANSWER_WITH" and len(traj.committed) == 1


def test_policy_registry() -> None:
    assert {"heuristic", "human"} <= set(POLICIES)
    with pytest.raises(ConfigError, match="unknown policy 'nope'; available: .*heuristic"):
        make_policy("nope")


# -- human policy --------------------------------------------------------------------------------
def test_human_policy_reads_lines_and_handles_eof(hotpot_view, hotpot_questions) -> None:
    env = MenuEnv(hotpot_view)
    out = io.StringIO()
    # A0; then a typo, an empty line, help and a sentence are explained and asked again (no turn spent); EOF -> ANSWER
    policy = HumanPolicy(stdin=io.StringIO("A0\nA999\n\nhelp\nthe second one\n"), stdout=out)
    traj = run_episode(env, policy, hotpot_questions[0])
    assert [s.reply for s in traj.steps] == ["A0", traj.steps[1].chosen] and traj.invalid_turns == 0
    assert traj.steps[1].action_type == "ANSWER" and traj.terminated_by == "ANSWER"
    assert traj.answer == "" and traj.turns == 2
    text = out.getvalue()
    assert "Not an action: unknown action id A999; available: A0" in text and "No turn was used" in text
    assert text.count("Type one action id") == 2  # the empty line and 'help'
    assert "Not an action: no action id found" in text
    assert text.count("action> ") == 6 and "answer> " in text


def test_human_policy_quit_ends_with_answer(hotpot_view, hotpot_questions) -> None:
    env = MenuEnv(hotpot_view)
    traj = run_episode(env, HumanPolicy(stdin=io.StringIO("quit\nmy answer\n"), stdout=io.StringIO()), hotpot_questions[0])
    assert traj.turns == 1 and traj.terminated_by == "ANSWER" and traj.answer == "my answer"


def _first_menus(view, question: str) -> tuple[str, str, str]:
    """(a SELECT id of the first menu, the ANSWER id after that SELECT, the selected sentence text)."""
    env = MenuEnv(view)
    env.reset(QAItem("menu", question, (), ""))
    select = next(a for a in env.menu.actions if a.type is ActionType.SELECT)
    text = view.sentences(list(select.targets))[select.targets[0]].text
    env.step(select.id)
    return select.id, env.menu.actions[-1].id, text


def test_menu_command_scripted(hotpot_dir, hotpot_view, hotpot_questions, monkeypatch, capsys, tmp_path: Path) -> None:
    item = hotpot_questions[0]
    select_id, answer_id, selected_text = _first_menus(hotpot_view, item.question)
    assert answer_id != "A99"
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{select_id}\nA99\n{answer_id}\n1974\n"))
    save = tmp_path / "menu.jsonl"
    rc = main(["menu", str(hotpot_dir), item.question, "--answer", "1974", "--save", str(save)])
    out = capsys.readouterr().out
    assert rc == 0
    assert "[Step 1/6]" in out and f"{select_id} = SELECT S0" in out
    # a typo is explained and asked again: it costs no turn
    assert "Not an action: unknown action id A99; available: A0, A1" in out and "No turn was used" in out
    # the printed trajectory
    assert f"-- turn 1: reply '{select_id}'" in out and f">> {select_id} = SELECT S0" in out
    assert f">> {select_id} = SELECT S0 | {selected_text[:40]}" in out  # the printed menu shows each sentence's text
    assert "A99" not in out.split("-- turn 1:")[1] and "INVALID" not in out
    assert "committed: [" in out and selected_text in out
    assert "Answer: '1974'  (ended by ANSWER, 2 turns)" in out
    assert "Gold: ['1974']  EM=1 F1=1.00" in out
    assert f"trajectory appended to {save}" in out
    [traj] = list(load_jsonl(save))
    assert traj.answer == "1974" and traj.turns == 2 and traj.invalid_turns == 0 and traj.question == item.question


def test_menu_command_subprocess_pipe(hotpot_dir, hotpot_view, hotpot_questions) -> None:
    """The real entry point with a piped stdin: one typo (asked again), then the input ends (EOF -> ANSWER, empty answer)."""
    item = hotpot_questions[0]
    select_id, _, _ = _first_menus(hotpot_view, item.question)
    proc = subprocess.run([sys.executable, "-m", "harness_g", "menu", str(hotpot_dir), item.question, "--max-turns", "4"],
                          input=f"{select_id}\nA99\n", capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "Not an action: unknown action id A99; available: A0, A1" in out
    assert f">> {select_id} = SELECT S0" in out and "INVALID" not in out
    assert "Answer: ''  (ended by ANSWER, 2 turns)" in out
    assert "Traceback" not in proc.stderr


def test_menu_command_eof(hotpot_dir, hotpot_questions, monkeypatch, capsys) -> None:
    item = hotpot_questions[0]
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    rc = main(["menu", str(hotpot_dir), item.question, "--max-turns", "3"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "[Step 1/3]" in out and "Answer: ''  (ended by ANSWER, 1 turns)" in out


def test_ask_command_json(hotpot_dir, capsys) -> None:
    rc = main(["ask", str(hotpot_dir), ADHOC.question, "--json", "--max-turns", "2", "--answer", ADHOC.answers[1]])
    out = capsys.readouterr().out
    assert rc == 0
    data = json.loads(out)
    assert data["question"] == ADHOC.question and data["answers"] == [ADHOC.answers[1]]
    assert data["env_config"]["max_turns"] == 2 and [s["action_type"] for s in data["steps"]] == ["SELECT", "ANSWER"]
    # one commit (the Sørensen sentence): the extractive answer is one of its PERSON mentions
    assert data["answer"] in ("Peder Lauritz Sørensen", "S. P. L. Sørensen") and M.token_f1(data["answer"], ADHOC.answers) > 0


def test_agent_commands_one_line_errors(hotpot_dir, tmp_path: Path, capsys) -> None:
    bad = tmp_path / "env.yaml"
    bad.write_text("max_turn: 3\n")
    rc = main(["ask", str(hotpot_dir), "q?", "--env-config", str(bad)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "unknown env config field(s): max_turn" in err
    rc = main(["ask", str(hotpot_dir), "q?", "--max-turns", "0"])
    err = capsys.readouterr().err
    assert rc == 2 and "max_turns: must be >= 1" in err
    rc = main(["ask", str(hotpot_dir), "q?", "--policy", "nope"])
    err = capsys.readouterr().err
    assert rc == 2 and "unknown policy 'nope'" in err


def test_sigterm_stops_the_embedded_server_it_started(artifact_copy, hotpot_questions) -> None:
    """`kill` / `timeout` (SIGTERM) unwinds like Ctrl-C: the embedded FalkorDB the command started is stopped, not
    left running (issue 15 §6)."""
    import os
    import signal
    import time

    from graph_fixtures import HOTPOT_FILE
    from harness_g.graph.stores.falkordb_server import PID_FILE

    graph_dir = artifact_copy("sigterm")
    subprocess.run([sys.executable, "-m", "harness_g", "build", "--format", "hotpotqa", "--input", str(HOTPOT_FILE),
                    "--out", str(graph_dir), "-q"], check=True, capture_output=True, timeout=300)
    proc = subprocess.Popen([sys.executable, "-m", "harness_g", "menu", str(graph_dir), hotpot_questions[0].question],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        seen = ""
        while "action> " not in seen:  # the menu is shown: the server is up and the command waits for input
            ch = proc.stdout.read(1)
            assert ch, f"menu exited early: {proc.stderr.read()}"
            seen += ch
        [pid_file] = list(graph_dir.rglob(PID_FILE))
        pid = int(pid_file.read_text().split()[0])
        os.kill(pid, 0)  # alive
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=60)
        err = proc.stderr.read()
    finally:
        proc.kill()
    assert rc == 143 and "terminated (SIGTERM)" in err and "Traceback" not in err
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"embedded FalkorDB (pid {pid}) left running after SIGTERM")


def test_store_flag_on_a_read_command_does_not_change_store_json(artifact_copy, hotpot_questions, capsys) -> None:
    """`--store embedded:PORT` on `ask` opens that store for this call only; GRAPH_DIR/store.json (where later calls
    go) is not rewritten (issue 15 §6)."""
    import socket

    from graph_fixtures import HOTPOT_FILE
    from harness_g.graph.load import STORE_FILE

    graph_dir = artifact_copy("readonly-store")
    assert main(["build", "--format", "hotpotqa", "--input", str(HOTPOT_FILE), "--out", str(graph_dir), "-q"]) == 0
    before = (graph_dir / STORE_FILE).read_text() if (graph_dir / STORE_FILE).exists() else None
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    capsys.readouterr()
    assert main(["ask", str(graph_dir), hotpot_questions[0].question, "--store", f"embedded:{port}", "--max-turns", "1"]) == 0
    assert "Answer:" in capsys.readouterr().out
    after = (graph_dir / STORE_FILE).read_text() if (graph_dir / STORE_FILE).exists() else None
    assert after == before and (after is None or str(port) not in after)
