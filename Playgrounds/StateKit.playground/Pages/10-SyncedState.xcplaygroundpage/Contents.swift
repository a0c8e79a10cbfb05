//: # SyncedState and sinks
//:
//: PLACEHOLDER — completed when the sinks work is merged (`SyncedState` is not on this branch
//: yet). It will forward a container's changes to an analytics sink and a remote-sync sink, show
//: batching and `flush()`, and implement a `StateSink` of its own.
import StateKit

print("SyncedState: see the Sinks article until this page is completed.")
