"""Drive every SDK call WIRE.md documents against `echo_stub.py` (see there). Each call is
preceded by a `### name` line on stdout, in the same order as the stub's request lines."""
import sys

from upstash_vector import Index, Vector
from upstash_vector.types import SparseVector, WeightingStrategy, FusionAlgorithm, QueryMode, MetadataUpdateMode
from qstash import QStash
import numpy as np
U = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:18080"
idx = Index(url=U, token="tok")
def step(name):
    print(f"### {name}", flush=True)
step("upsert dense tuple+dict+Vector, numpy"); idx.upsert([("a", [0.1]*8, {"g": 1}, "txt"), {"id": "b", "vector": np.ones(8, dtype=np.float32), "metadata": {"x": "y"}}, Vector(id="c", vector=[1.0]*8)])
step("upsert sparse"); idx.upsert([("s1", SparseVector([1, 5], [0.5, 0.25]))], namespace="sp")
step("upsert hybrid"); idx.upsert([Vector(id="h1", vector=[1.0]*8, sparse_vector=([3], [1.0]), metadata={"m": 1}, data="d")], namespace="hy")
step("query single"); idx.query(vector=[0.5]*8, top_k=3, include_metadata=True, include_vectors=True, include_data=True, filter="g = 1", namespace="ns1")
step("query hybrid opts"); idx.query(vector=[0.5]*8, sparse_vector=([1],[1.0]), weighting_strategy=WeightingStrategy.IDF, fusion_algorithm=FusionAlgorithm.DBSF, query_mode=QueryMode.DENSE)
step("query_many 2"); idx.query_many(queries=[{"vector": [0.5]*8, "top_k": 2, "filter": "g = 1"}, {"vector": [0.1]*8, "include_metadata": True, "query_mode": QueryMode.SPARSE, "weighting_strategy": WeightingStrategy.IDF}], namespace="ns1")
step("query_many 1"); idx.query_many(queries=[{"vector": [0.5]*8, "top_k": 2}])
step("fetch ids"); idx.fetch(["a", "b"], include_vectors=True, include_metadata=True, include_data=True)
step("fetch single id ns"); idx.fetch("a", namespace="ns1")
step("fetch prefix"); idx.fetch(prefix="id-")
step("delete ids"); idx.delete(["a","b"])
step("delete prefix"); idx.delete(prefix="p-", namespace="ns1")
step("delete filter"); idx.delete(filter="g = 1")
step("range"); idx.range(cursor="", limit=10, include_metadata=True)
step("range prefix ns"); idx.range(cursor="5", limit=10, prefix="id-", namespace="ns1")
step("update"); idx.update("a", vector=[0.2]*8, metadata={"k": None}, metadata_update_mode=MetadataUpdateMode.PATCH, data="new")
step("reset default"); idx.reset()
step("reset ns"); idx.reset(namespace="ns1")
step("reset all"); idx.reset(all=True)
step("info"); idx.info()
step("list_namespaces"); idx.list_namespaces()
step("delete_namespace"); idx.delete_namespace("ns1")
step("namespace with odd chars"); idx.delete_namespace("a b/c")
q = QStash("qtok", base_url=U + "/")
step("publish_json fc int period"); q.message.publish_json(url="http://127.0.0.1:9999/hook?x=1", body={"n": 1}, flow_control={"key": "k1", "parallelism": 2, "rate": 5, "period": 1})
step("publish bytes fc str period"); q.message.publish(url="http://127.0.0.1:9999/hook", body=b"raw\x00bytes", flow_control={"key": "k1", "rate": 10, "period": "1m"})
step("publish fc key only"); q.message.publish(url="http://127.0.0.1:9999/hook", body="x", flow_control={"key": "k2"})
step("fc get"); q.flow_control.get("k1")
step("fc global"); q.flow_control.get_global_parallelism()
step("fc pause"); q.flow_control.pause("k1")
step("fc resume"); q.flow_control.resume("k1")
step("fc pin"); q.flow_control.pin("k1", {"parallelism": 3, "rate": 7, "period": 60})
step("fc pin empty"); q.flow_control.pin("k1", {})
step("fc unpin"); q.flow_control.unpin("k1", {"parallelism": True, "rate": False})
step("fc reset_rate"); q.flow_control.reset_rate("k1")
step("fc list via http"); q.http.request(path="/v2/flowControl", method="GET")
