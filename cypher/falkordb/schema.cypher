// schema (FalkorDB): range indexes on the id-like properties every MERGE/MATCH looks up.
// One statement per ';'. Re-running reports "already indexed", which the store ignores.
// Parameters: none. Returns: nothing.
CREATE INDEX FOR (n:Paragraph) ON (n.id);
CREATE INDEX FOR (n:Sentence) ON (n.id);
CREATE INDEX FOR (n:Entity) ON (n.id);
CREATE INDEX FOR (n:Entity) ON (n.name);
CREATE INDEX FOR (n:GraphMeta) ON (n.key)
