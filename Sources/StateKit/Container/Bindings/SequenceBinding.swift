/// The running side of `target <~ sequence`: a task that writes each element of the sequence into
/// the target, until the sequence ends or the binding's ``Subscription`` is cancelled or released.
///
/// It is the subscription's owner: cancelling the token cancels the task, and the task marks the
/// subscription's link released when it ends, so ``Subscription/isActive`` turns `false` once the
/// sequence is over.
final class SequenceBinding: Sendable {
    private struct Progress {
        var task: Task<Void, Never>?
        var isCancelled = false
    }

    private let progress = LockedBox(Progress())

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
        let isCancelled = binding.progress.withLock { progress in
            progress.task = task
            return progress.isCancelled
        }
        if isCancelled { task.cancel() }
        return subscription
    }

    /// The token was cancelled or released: stop the task. Called with the link's lock held,
    /// which is not the one guarding `progress`.
    private func stop() {
        let task = progress.withLock { progress in
            progress.isCancelled = true
            return progress.task
        }
        task?.cancel()
    }
}

extension StateDiagnostic.Kind {
    /// An `AsyncSequence` bound to a container with `<~` threw; the binding ended, and the
    /// container keeps the last value it received.
    public static let bindingFailed = StateDiagnostic.Kind("binding-failed")
}
