#!/bin/bash
# rows (issue 13): lane-rows (default), ema_rows and the cumsum variants: tests and timings
exec bash bench/gpu_round_rows.sh
