// meta_get: which artifact the graph holds and whether its load finished.
// Parameters: none
// Returns: content_hash, embedding_model, embedding_dim (int), complete (bool), loaded_at (ISO-8601 string);
//          zero rows on an empty graph
MATCH (m:GraphMeta {key: 'artifact'})
RETURN m.content_hash AS content_hash, m.embedding_model AS embedding_model, m.embedding_dim AS embedding_dim,
       m.complete AS complete, m.loaded_at AS loaded_at
