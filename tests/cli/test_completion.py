"""`dr completion bash|zsh|fish` (issue 31): scripts generated from the parser. The bash one is
sourced in a real bash and asked what `dr sn<TAB>` and a command's options complete to, as
bash's completion would (COMP_WORDS, COMP_CWORD, the function `complete -F` names)."""

from __future__ import annotations

import argparse
import subprocess

import pytest

from dr.cli.arguments import Renamed
from dr.cli.exitcodes import Exit
from dr.cli.main import build_parser, main

ASK = """source "$1"; shift
complete -p dr
ask() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _dr
        echo "== $*"; printf '%s\\n' "${COMPREPLY[@]}"; }
"""


def _script(capsys, shell: str) -> str:
    assert main(["completion", shell]) == Exit.OK
    return capsys.readouterr().out


def _ask(script_path, *lines: list[str]) -> tuple[str, list[list[str]]]:
    """Each line of words to complete (its last word the one under the cursor), in one bash."""
    asks = "\n".join("ask " + " ".join(f"'{w}'" for w in words) for words in lines)
    done = subprocess.run(["bash", "--norc", "--noprofile", "-c", ASK + asks, "bash", str(script_path)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    spec, *answers = done.stdout.split("== ")
    return spec, [sorted(w for w in a.splitlines()[1:] if w) for a in answers]


def _command(name: str) -> argparse.ArgumentParser:
    sub = next(a for a in build_parser(None)._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


def _long_options(name: str) -> list[str]:
    """The command's current long options, from its parser (old spellings left out)."""
    return sorted(o for a in _command(name)._actions if not getattr(a, "deprecated", False)
                  for o in (a.option_strings[:1] if isinstance(a, Renamed) else a.option_strings)
                  if o.startswith("--"))


def test_bash_completes_commands_options_and_choices_in_a_real_bash(tmp_path, capsys):
    path = tmp_path / "dr.bash"
    path.write_text(_script(capsys, "bash"))
    spec, answers = _ask(path, ["dr", "sn"], ["dr", "backup", "--"], ["dr", "--json", "--kubeconfig", "k.yaml", "re"],
                         ["dr", "audit", "--format", ""], ["dr", "deploy", "render", "--ou"], ["dr", "plan", ""],
                         ["dr", "restore", "--plan", ""], ["dr", "completion", ""], ["dr", "verify", "--i"])
    assert "-F _dr" in spec and spec.rstrip().endswith(" dr")
    sn, backup, after_globals, formats, out, plan, plan_file, shells, verify_i = answers
    assert verify_i == ["--identity"]  # not the deprecated --images
    assert sn == ["snapshots"]
    assert backup == _long_options("backup") and "--plan" in backup and "--kubeconfig" in backup
    assert after_globals == ["restore"]  # --kubeconfig's value is not taken for the command word
    assert formats == ["html", "md"]  # not the deprecated `json` (--json is the spelling)
    assert out == ["--out"]  # not the deprecated --output
    assert plan == ["schema", "validate"]
    assert plan_file == []  # a free value: bash's own file completion (-o default) takes over
    assert shells == ["bash", "fish", "zsh"]


def test_zsh_runs_the_same_function_through_bashcompinit(capsys):
    bash, zsh = _script(capsys, "bash"), _script(capsys, "zsh")
    assert "bashcompinit" in zsh.split("_dr()")[0] and zsh.endswith(bash)


def test_fish_completes_every_command_and_its_options_with_their_help(capsys):
    lines = _script(capsys, "fish").splitlines()
    sub = next(a for a in build_parser(None)._actions if isinstance(a, argparse._SubParsersAction))
    for name in sub.choices:
        assert any(f"'__fish_use_subcommand' -a {name} -d " in line for line in lines), name
        for option in _long_options(name):
            assert any(f"'__fish_seen_subcommand_from {name}' " in line and f" -l {option[2:]} " in line
                       for line in lines), (name, option)
    assert not any("-l output " in line for line in lines)


@pytest.mark.parametrize("argv", [["completion"], ["completion", "tcsh"]])
def test_completion_names_the_shells_it_knows(argv, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == Exit.USAGE and "bash" in capsys.readouterr().err
