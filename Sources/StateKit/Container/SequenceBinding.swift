/// The running side of `target <~ sequence`: a task that writes each element of the sequence into
/// the target, until the sequence ends or the binding's ``Subscription`` is cancelled or released.
///
/// It is the subscription's owner: cancelling the token cancels the task, and the task marks the
/// subscription's link released when it ends, so ``Subscription/isActive`` turns `false` once the
/// sequence is over.
final class SequenceBinding: @unchecked Sendable {
    private let lock = Lock()
    /// Guarded by `lock`.
    private var task: Task<Void, Never>?
    private var isCancelled = false

    /// Starts copying `source`'s elements with `write` and returns the binding's token.
    static func start<Source: AsyncSequence & Sendable>(
        _ source: Source,
        targetKey: String,
        write: @escaping @Sendable (Source.Element) -> Void
    ) -> Subscription {
        let binding = SequenceBinding()
        let link = SubscriberLink(lock: Lock()) { _ in binding.stop() }
        let entry = SubscriptionEntry(link: link, startVersion: 0)
        let subscription = Subscription(entry)
        let task = Task {
            defer { link.ownerReleased() }
            do {
                for try await element in source {
                    guard entry.isActive else { return }
                    write(element)
                }
            } catch  where !(error is CancellationError) {
                StateDiagnostics.report(
                    StateDiagnostic(
                        kind: .bindingFailed,
                        keys: [targetKey],
                        message: "the sequence bound to '\(targetKey)' threw, which ended the binding: \(error)",
                        error: error
                    )
                )
            } catch {}
        }
        binding.lock.lock()
        binding.task = task
        let isCancelled = binding.isCancelled
        binding.lock.unlock()
        if isCancelled { task.cancel() }
        return subscription
    }

    /// The token was cancelled or released: stop the task. Called with the link's lock held,
    /// which is not `lock`.
    private func stop() {
        lock.lock()
        isCancelled = true
        let task = self.task
        lock.unlock()
        task?.cancel()
    }
}

extension StateDiagnostic.Kind {
    /// An `AsyncSequence` bound to a container with `<~` threw; the binding ended, and the
    /// container keeps the last value it received.
    public static let bindingFailed = StateDiagnostic.Kind("binding-failed")
}
