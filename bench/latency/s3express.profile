# First-byte latency of S3 Express One Zone (directory buckets, client in the same zone), in
# milliseconds: `kind = p50 p99`, drawn lognormal. An assumption, not a measurement: AWS describes
# the storage class as "consistent single-digit millisecond request latency"; the p50s below are
# single digits and the tails 4× them. Directory buckets support conditional writes
# (If-None-Match), so a Delta log can commit there. Used by the writer model (issue #48) to show how
# the log's commit rate moves with the store's latency; no benchmark figure rests on it alone.
get = 4 16
head = 3 12
put = 6 24
put_if_absent = 8 32
list = 6 24
delete = 4 16
