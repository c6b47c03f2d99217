"""Which ops have a property is asked of the op table, never listed by hand outside
`intentc/ir/` (tools/oplists.py finds tuple/list/set literals made of op names)."""
import subprocess
import sys

from sample_files import ROOT


def test_no_hand_written_op_name_list_outside_the_ir():
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "oplists.py"), str(ROOT / "intentc")],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout


def test_the_finder_finds_a_list(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text('if op.name in ("add", "sub"):\n    pass\nKINDS = ("add", "max")\n')
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "oplists.py"), str(planted)],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 1
    assert "planted.py:1: add, sub" in done.stdout
    assert "max" not in done.stdout          # a list of kinds that merely share names is not an op list
