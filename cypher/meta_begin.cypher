// meta_begin: mark a load as started: the single GraphMeta node records which artifact the graph holds,
// with complete = false until meta_complete runs (a crash mid-load leaves it false).
// Parameters:
//   $content_hash: string     the artifact's manifest content_hash
//   $embedding_model: string  sentence-embedding model name
//   $embedding_dim: int       embedding dimension
//   $loaded_at: string        ISO-8601 UTC time the load started
//   $graph_dir: string        absolute path of the GRAPH_DIR loaded (which graph this is: one graph per database)
//   $graph_host: string       host name of the machine that loaded it (paths are per machine)
//   $graph_name: string       the graph's dataset name, for messages
//   $hub_sample: int|null     the size of the hub samples written with this load (hub_sample.HUB_SAMPLE_SIZE;
//                             null: none written, e.g. a delta on a store loaded before hub samples existed)
// Returns: nothing
MERGE (m:GraphMeta {key: 'artifact'})
SET m.content_hash = $content_hash, m.embedding_model = $embedding_model, m.embedding_dim = $embedding_dim,
    m.complete = false, m.loaded_at = $loaded_at, m.graph_dir = $graph_dir, m.graph_host = $graph_host,
    m.graph_name = $graph_name, m.hub_sample = $hub_sample
