/// Runs `operation` for at most `timeout`: its result, or `expired` once the deadline passed
/// first (the operation is cancelled then, and its result dropped).
///
/// For the waits that take a timeout (``SyncedState/flush(timeout:)``,
/// ``WriteReceipt/outcome(timeout:)``): the operation must end soon after it is cancelled.
func withDeadline<Result: Sendable>(
    _ timeout: Duration, else expired: Result, _ operation: @escaping @Sendable () async -> Result
) async -> Result {
    await withTaskGroup(of: Result.self) { group in
        group.addTask(operation: operation)
        group.addTask {
            try? await Task.sleep(for: timeout)
            return expired
        }
        let first = await group.next() ?? expired
        group.cancelAll()
        return first
    }
}
