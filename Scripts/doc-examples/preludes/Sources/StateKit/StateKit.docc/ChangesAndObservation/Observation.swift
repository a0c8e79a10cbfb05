// Hidden setup for the examples of Observation.md (see Scripts/check-doc-examples.sh).
let counter = MonitoredState(0, key: "counter")
struct Profile: Equatable, Sendable { var name = "Ann" }
func render(_ count: Int) {}
func log(_ change: StateChange<Int>) {}
