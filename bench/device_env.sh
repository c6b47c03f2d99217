# Source this at the start of a command on the lent GPU machine (from the repository root):
# installs the wheels carried in .whl/ (those the machine's image lacks) and puts intentc on
# the path. Make .whl/ here first (git-ignored; carry it with the call), for the image's
# Python 3.12: pip download --no-deps --only-binary=:all: --python-version 3.12
#   --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64
#   --platform manylinux2014_x86_64 -d .whl lark lark-cython interegular filecheck pydantic
#   pydantic_core annotated-types typing-inspection   (the versions the venv has)
# and carry it with the call; the image's own llvmlite, numpy, ml_dtypes, torch and triton serve.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || return 1
export PYTHONPATH=/tmp/site:$PWD:$PWD/server PYTHONUNBUFFERED=1
