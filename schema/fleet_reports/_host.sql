-- _host: the filter's host (--host), or every host when it is empty.
((SELECT host FROM filter) = '' OR host = (SELECT host FROM filter))
