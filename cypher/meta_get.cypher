// meta_get: which artifact the graph holds and whether its load finished.
// Parameters: none
// Returns: content_hash, embedding_model, embedding_dim (int), complete (bool), loaded_at (ISO-8601 string),
//          graph_dir, graph_host, graph_name (strings; null for graphs loaded before they were recorded),
//          hub_sample (int: the hub sample size the load wrote; null for graphs loaded before hub samples);
//          zero rows on an empty graph
MATCH (m:GraphMeta {key: 'artifact'})
RETURN m.content_hash AS content_hash, m.embedding_model AS embedding_model, m.embedding_dim AS embedding_dim,
       m.complete AS complete, m.loaded_at AS loaded_at, m.graph_dir AS graph_dir, m.graph_host AS graph_host,
       m.graph_name AS graph_name, m.hub_sample AS hub_sample
