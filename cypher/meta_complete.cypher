// meta_complete: mark the load of $content_hash as finished (no-op when another artifact's load began since).
// Parameters:
//   $content_hash: string  the artifact's manifest content_hash
//   $loaded_at: string     ISO-8601 UTC time the load finished
// Returns: content_hash (one row when the flag was set, none otherwise)
MATCH (m:GraphMeta {key: 'artifact'})
WHERE m.content_hash = $content_hash
SET m.complete = true, m.loaded_at = $loaded_at
RETURN m.content_hash AS content_hash
