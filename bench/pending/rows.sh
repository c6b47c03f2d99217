#!/bin/bash
# rows (issue 13): the default-off GPU paths (lane-rows, grouped-scans, predicated-vectors): tests and timings
exec bash bench/gpu_round_rows.sh
