# First-byte latency of S3 Standard requests from a client in the bucket's region, in
# milliseconds: `kind = p50 p99`, drawn lognormal. The built-in profile `s3` has these numbers
# (crates/storage/src/latency.rs, S3_PROFILE).
#
# Sources: AWS, "Best practices design patterns: optimizing Amazon S3 performance" (first-byte
# latency of small objects "100-200 milliseconds" at the tail, tens of milliseconds typical);
# issue #51's measurement profile (GET ~30 ms p50 / 150 ms p99, LIST ~50 ms, PUT ~50 ms,
# conditional PUT ~60 ms, lognormal tails), which this file follows so figures compare.
get = 30 150
head = 20 100
put = 50 250
put_if_absent = 60 300
list = 50 200
delete = 30 150
