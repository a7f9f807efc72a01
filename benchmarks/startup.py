"""Start-up time of `automil --help` and `automil datasets` (target: under 2 s; lazy imports).

    python benchmarks/startup.py [--repeat 5]
"""

import argparse
import subprocess
import sys
import time

COMMANDS = (["--help"], ["datasets"], ["learners"])


def best_of(args, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "automil.cli", *args], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    repeat = parser.parse_args().repeat
    print(f"{'command':<18} {'best of ' + str(repeat):>10}  {'share of 2 s':>12}")
    for args in COMMANDS:
        seconds = best_of(args, repeat)
        print(f"automil {' '.join(args):<10} {seconds:>9.2f}s  {seconds / 2.0:>11.0%}")


if __name__ == "__main__":
    main()
