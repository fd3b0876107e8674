"""``accelerate launch -m harness_g.training --config … --output-dir …``"""
import argparse
import sys

from harness_g.errors import HarnessError
from harness_g.training.cli import add_train_arguments, run_train


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m harness_g.training", description="GRPO + SNC training on Accelerate")
    add_train_arguments(parser)
    args = parser.parse_args()
    try:
        return run_train(args)
    except HarnessError as exc:
        print(f"harness-g: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
