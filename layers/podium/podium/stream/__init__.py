"""The stream side: the table's change stream, read by two consumers (DynamoDB Streams
serves two readers a shard without throttling). ``records`` turns a stream record into a
typed change; one module per effect applies it: member ``counts``, ``rollups``, rank
``upkeep`` (head and count tree) and the event-log ``fold`` in the aggregator (``aggregate``),
notifications in the notifier (``notify``); ``entrypoint`` is the handler shape both share."""
