"""The testkit binary driven by the official Kubernetes Python client, as a user in another
language would: namespaces, create/replace conflicts, strategic merge and JSON patches,
label and field selectors, paging, a watch from a list's resourceVersion, 410 Gone after
compaction, finalizers, and a custom resource's generation, status subresource, schema
validation and defaulting. Run by scripts/python-client.sh; exits 1 naming what failed."""
import json
import sys
import threading
import urllib.request

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

config.load_kube_config(config_file=sys.argv[1])
v1 = client.CoreV1Api()
custom = client.CustomObjectsApi()
NS = "demo"
GROUP, VERSION, PLURAL = "example.com", "v1", "widgets"
failed = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failed.append(what)


def status_of(call):
    """The HTTP status an API call fails with, or None when it succeeds."""
    try:
        call()
    except ApiException as e:
        return e.status
    return None


def widget(name, spec):
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Widget",
            "metadata": {"name": name}, "spec": spec}


names = {n.metadata.name for n in v1.list_namespace().items}
check({"default", "kube-system", "kube-public", "kube-node-lease", NS} <= names,
      f"namespaces: {sorted(names)}")
listed = v1.list_namespaced_config_map(NS)
check(listed.metadata.resource_version is not None and len(listed.items) > 0,
      f"list: resourceVersion {listed.metadata.resource_version}, {len(listed.items)} items")

cm = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py-cm", labels={"app": "py"}),
                        data={"a": "1"})
made = v1.create_namespaced_config_map(NS, cm)
check(bool(made.metadata.uid and made.metadata.resource_version
           and made.metadata.creation_timestamp), "create sets uid, resourceVersion, creationTimestamp")
check(status_of(lambda: v1.create_namespaced_config_map(NS, cm)) == 409, "a second create is 409")
stale = v1.read_namespaced_config_map("py-cm", NS)
stale.data = {"a": "2"}
v1.replace_namespaced_config_map("py-cm", NS, stale)
stale.data = {"a": "3"}
check(status_of(lambda: v1.replace_namespaced_config_map("py-cm", NS, stale)) == 409,
      "a replace at a stale resourceVersion is 409")

# A dict body goes as a strategic merge patch, a list as a JSON patch.
patched = v1.patch_namespaced_config_map(
    "py-cm", NS, {"metadata": {"labels": {"tier": "x"}}, "data": {"b": "2"}})
check(patched.metadata.labels == {"app": "py", "tier": "x"} and patched.data == {"a": "2", "b": "2"},
      f"strategic merge patch: {patched.metadata.labels} {patched.data}")
patched = v1.patch_namespaced_config_map("py-cm", NS, [{"op": "remove", "path": "/data/b"}])
check(patched.data == {"a": "2"}, f"JSON patch: {patched.data}")

by_label = v1.list_namespaced_config_map(NS, label_selector="app=py,tier in (x,y)")
check([i.metadata.name for i in by_label.items] == ["py-cm"], "label selector")
by_field = v1.list_namespaced_config_map(NS, field_selector="metadata.name=py-cm")
check([i.metadata.name for i in by_field.items] == ["py-cm"], "field selector")

for i in range(7):
    v1.create_namespaced_config_map(NS, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=f"page-{i}", labels={"page": "yes"})))
seen, token, pages = [], None, 0
while True:
    page = v1.list_namespaced_config_map(NS, label_selector="page=yes", limit=3, _continue=token)
    pages += 1
    seen += [i.metadata.name for i in page.items]
    token = page.metadata._continue
    if not token:
        break
check(seen == [f"page-{i}" for i in range(7)] and pages == 3,
      f"paging by 3: {pages} pages, {seen}")

since = v1.list_namespaced_config_map(NS).metadata.resource_version
events = []


def follow():
    w = watch.Watch()
    for ev in w.stream(v1.list_namespaced_config_map, NS, resource_version=since,
                       allow_watch_bookmarks=True, timeout_seconds=10):
        if ev["type"] != "BOOKMARK":
            events.append((ev["type"], ev["object"].metadata.name))
        if ev["type"] == "DELETED":
            w.stop()


# The watch starts at `since`, so it replays whatever happened before it connected.
follower = threading.Thread(target=follow)
follower.start()
v1.create_namespaced_config_map(NS, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="w-1")))
v1.patch_namespaced_config_map("w-1", NS, {"data": {"x": "y"}})
v1.delete_namespaced_config_map("w-1", NS)
follower.join(15)
check(events == [("ADDED", "w-1"), ("MODIFIED", "w-1"), ("DELETED", "w-1")],
      f"watch from the list's resourceVersion: {events}")

host = client.Configuration.get_default_copy().host
compact = urllib.request.Request(host + "/testkit/admin/compact", data=b"{}", method="POST",
                                 headers={"Content-Type": "application/json"})
floor = json.load(urllib.request.urlopen(compact))["floor"]


def watch_from_before_compaction():
    for _ in watch.Watch().stream(v1.list_namespaced_config_map, NS, resource_version=since,
                                  timeout_seconds=2):
        pass


check(status_of(watch_from_before_compaction) == 410,
      f"a watch from before the compaction (now at {floor}) is 410 Gone")

v1.create_namespaced_config_map(NS, client.V1ConfigMap(
    metadata=client.V1ObjectMeta(name="fin", finalizers=["example.com/cleanup"])))
v1.delete_namespaced_config_map("fin", NS)
check(v1.read_namespaced_config_map("fin", NS).metadata.deletion_timestamp is not None,
      "a delete with a finalizer sets deletionTimestamp and keeps the object")
v1.patch_namespaced_config_map("fin", NS, [{"op": "remove", "path": "/metadata/finalizers"}])
check(status_of(lambda: v1.read_namespaced_config_map("fin", NS)) == 404,
      "the object goes with its last finalizer")

made = custom.create_namespaced_custom_object(
    GROUP, VERSION, NS, PLURAL, widget("py-w", {"color": "red", "size": 3}))
check(made["metadata"].get("generation") == 1, "a custom resource starts at generation 1")
made = custom.patch_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "py-w", {"spec": {"size": 4}})
check(made["metadata"].get("generation") == 2, "a spec patch bumps the generation")
custom.patch_namespaced_custom_object_status(GROUP, VERSION, NS, PLURAL, "py-w",
                                             {"status": {"ready": True}})
got = custom.get_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "py-w")
check(got.get("status") == {"ready": True} and got["metadata"]["generation"] == 2,
      f"the status subresource: {got.get('status')}, generation {got['metadata']['generation']}")
try:
    custom.create_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, widget("bad", {"color": "green"}))
    check(False, "a value outside the schema's enum is rejected")
except ApiException as e:
    check(e.status == 422 and "spec.color" in e.body, f"a value outside the schema's enum: {e.status}")
made = custom.create_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, widget("dflt", {"color": "blue"}))
check(made["spec"].get("size") == 1, f"the schema's default applied: {made['spec']}")
custom.delete_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "py-w")
check(status_of(lambda: custom.get_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, "py-w")) == 404,
      "a deleted custom resource is 404")

if failed:
    print(f"{len(failed)} failed: {failed}")
    sys.exit(1)
print("-- every check passed")
