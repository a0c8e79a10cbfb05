import Foundation

/// A ``SyncedState``'s receipts: what became of each version at every one of its sinks, read
/// from the sinks' pipelines (and, for an earlier launch, from their outbox logs), and the
/// receipts waiting for an outcome.
///
/// The book keeps no outcome of its own: a pipeline settles its changes in version order, and the
/// sink's books in the ledger remember those it did not deliver (``SinkBooks/outcomes``), so the
/// outcome of a version is read through the pipelines whenever it is asked, and a waiting receipt
/// is checked again whenever a pipeline's books or buffer change. A change handed to another
/// process's sender (a key shared across processes) is answered by what that sender published
/// (``CellRemotes/senderOutcome(of:at:)``), read again every ``senderPollInterval`` while a
/// receipt waits.
final class ReceiptBook<Value: Sendable>: ReceiptSource, @unchecked Sendable {
    private struct Waiter {
        var id: UInt64
        var version: UInt64
        var continuation: CheckedContinuation<WriteOutcome?, Never>
    }

    private let pipelines: [SinkPipeline<Value>]
    /// The cell's shared remote channels, when another process may send them
    /// (``CellRemotes/senderOutcome(of:at:)``).
    private let remotes: CellRemotes<Value>?
    /// The first version every pipeline was handed: the container's version when it started, plus
    /// one. Set by ``start(firstVersion:loggedThrough:)``, before the container is used.
    private var firstVersion: UInt64 = 1
    /// The last version an earlier launch logged: the pipelines behind a log know those.
    private var loggedThrough: UInt64 = 0
    /// The container's stored value, when it persists.
    private weak var persistence: StoredValue<Value>?
    private let lock = Lock()
    private var waiters: [Waiter] = []
    private var nextID: UInt64 = 0
    /// What the pipelines tell, from the first wait on: held here, as a pipeline the key's other
    /// containers share may hold it only weakly.
    private var observer: StatisticsObserver?

    /// Whether a poll of what another process's sender published is scheduled.
    private var isPolling = false

    init(pipelines: [SinkPipeline<Value>], persistence: StoredValue<Value>?, remotes: CellRemotes<Value>?) {
        self.pipelines = pipelines
        self.persistence = persistence
        self.remotes = remotes?.isAcrossProcesses == true ? remotes : nil
    }

    /// Where the container's versions start; called by its initializer.
    func start(firstVersion: UInt64, loggedThrough: UInt64) {
        self.firstVersion = firstVersion
        self.loggedThrough = loggedThrough
    }

    /// Whether `version`, at most the container's `current` version, is one this book answers for.
    func knows(_ version: UInt64, current: UInt64) -> Bool {
        version > 0 && version <= current && (version >= firstVersion || version <= loggedThrough)
    }

    /// The outcome of `version` now, or `nil` while some sink has not settled it.
    func outcome(of version: UInt64) -> WriteOutcome? {
        outcomes(of: [version])[0]
    }

    /// The outcomes of `versions`, reading each pipeline once.
    private func outcomes(of versions: [UInt64]) -> [WriteOutcome?] {
        var combined = [WriteOutcome?](repeating: .delivered, count: versions.count)
        for pipeline in pipelines {
            // Before this launch, only a log knows what became of a change.
            let asked = versions.map { $0 >= firstVersion || pipeline.log != nil }
            guard asked.contains(true) else { continue }
            let found = pipeline.outcomes(of: versions)
            for index in versions.indices where asked[index] {
                // A change handed to another process's sender: what that sender published.
                let outcome = found[index] ?? remotes?.senderOutcome(of: versions[index], at: pipeline)
                combined[index] = WriteOutcome.combining(combined[index], outcome)
            }
        }
        return combined
    }

    // MARK: Waiting

    func outcome(of version: UInt64, timeout: Duration) async -> WriteOutcome? {
        if let outcome = outcome(of: version) { return outcome }
        return await withDeadline(timeout, else: nil) { await self.wait(for: version) }
    }

    /// Waits until `version` has an outcome, or the task is cancelled (`nil`).
    private func wait(for version: UInt64) async -> WriteOutcome? {
        startObserving()
        let id = lock.withLock {
            nextID += 1
            return nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let isAdded = lock.withLock {
                    guard !Task.isCancelled else { return false }
                    waiters.append(Waiter(id: id, version: version, continuation: continuation))
                    return true
                }
                guard isAdded else { return continuation.resume(returning: nil) }
                // Settled between the first look and the registration: no change would tell.
                settle()
                pollSenderWhileWaiting()
            }
        } onCancel: {
            let waiter = lock.withLock {
                waiters.firstIndex { $0.id == id }.map { waiters.remove(at: $0) }
            }
            waiter?.continuation.resume(returning: nil)
        }
    }

    /// Has every pipeline tell the book when its statistics change (a batch sent, failed or
    /// dropped, the pipeline stopped), from the first wait on: until then, writes pay nothing.
    private func startObserving() {
        let observer: StatisticsObserver? = lock.withLock {
            guard self.observer == nil else { return nil }
            let observer = StatisticsObserver { [weak self] in self?.settle() }
            self.observer = observer
            return observer
        }
        guard let observer else { return }
        for pipeline in pipelines { pipeline.observeStatistics(observer) }
    }

    /// Another process's sender tells no change here: while receipts wait, what it published is
    /// read again every ``senderPollInterval``.
    private func pollSenderWhileWaiting() {
        guard remotes != nil else { return }
        let starts = lock.withLock {
            guard !isPolling, !waiters.isEmpty else { return false }
            isPolling = true
            return true
        }
        guard starts else { return }
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + Self.senderPollInterval) { [weak self] in
            guard let self else { return }
            self.lock.withLock { self.isPolling = false }
            self.settle()
            self.pollSenderWhileWaiting()
        }
    }

    /// How often a receipt waiting for another process's sender reads what it published.
    static var senderPollInterval: Double { 0.1 }

    /// Resumes the waiters whose versions have an outcome now.
    private func settle() {
        let versions = lock.withLock { waiters.map(\.version) }
        guard !versions.isEmpty else { return }
        let found = Dictionary(zip(versions, outcomes(of: versions)), uniquingKeysWith: { first, _ in first })
        let resolved: [(CheckedContinuation<WriteOutcome?, Never>, WriteOutcome)] = lock.withLock {
            var resolved: [(CheckedContinuation<WriteOutcome?, Never>, WriteOutcome)] = []
            waiters.removeAll { waiter in
                guard let outcome = found[waiter.version] ?? nil else { return false }
                resolved.append((waiter.continuation, outcome))
                return true
            }
            return resolved
        }
        for (continuation, outcome) in resolved { continuation.resume(returning: outcome) }
    }

    // MARK: Saved

    func saved(_ version: UInt64, timeout: Duration) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        let logs = pipelines.compactMap(\.log)
        var persistence = self.persistence
        guard persistence != nil || !logs.isEmpty else { return false }
        while !Task.isCancelled {
            if let stored = persistence {
                await stored.flushOffThePool()
                switch await stored.holdsOnDisk(version) {
                case true?: return true
                case false?: break
                case nil:
                    // Storage in memory: only an outbox can hold it on disk.
                    guard !logs.isEmpty else { return false }
                    persistence = nil
                }
            }
            for log in logs where await log.synchronize(through: version) { return true }
            let left = clock.now.duration(to: deadline)
            guard left > .zero else { return false }
            try? await Task.sleep(for: min(left, .milliseconds(50)))
        }
        return false
    }
}
