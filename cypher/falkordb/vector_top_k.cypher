// vector_top_k (FalkorDB): approximate k nearest sentences by cosine.
// FalkorDB's score is the cosine DISTANCE (0 = identical), so similarity = 1 - score, in [-1, 1].
// Parameters:
//   $vector: list<float>  query embedding (same dimension as the index)
//   $k: int               number of neighbours
// Returns: id (sentence id), similarity (float, cosine)
// Order: similarity descending, ties by id
CALL db.idx.vector.queryNodes('Sentence', 'embedding', $k, vecf32($vector)) YIELD node, score
RETURN node.id AS id, 1.0 - score AS similarity
ORDER BY similarity DESC, id
