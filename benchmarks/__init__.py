"""The benchmark suite: synclient against its peers on the same emulated project, side by side in one run.

``python -m benchmarks run [SCENARIO ...] [--repeat N] [--quick]`` -- see docs/benchmarks.md.
"""
