# Source this at the start of a command on the lent GPU machine (from the repository root):
# installs the wheels carried in .whl/ (those the machine's image lacks) and intentc itself.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || return 1
export PYTHONPATH=/tmp/site:$PWD:$PWD/server PYTHONUNBUFFERED=1
