"""``make bench``: what each access pattern costs on DynamoDB Local, against a naive
reference and a Redis sorted set. Not a test: it measures and writes docs/benchmarks.md."""
