-- _sized: a successful call with a size.
({{_ok}} AND isNotNull(bytes))
