"""ossmount benchmark harness (bench/run.sh): server, mounts, workloads, report."""
