/// An `AsyncSequence` of a container's or projection's values (or changes).
///
/// Each iteration subscribes on its own, with its own buffer, so any number of consumers can
/// iterate at once and a slow one never blocks a writer or another consumer. The iteration ends
/// when its task is cancelled or when the container is deallocated (after the elements already
/// buffered), and then (or when the iterator is released) its subscription is cancelled and its
/// buffer freed. A container's own ``MonitoredState/values`` does not keep the container alive;
/// a projection's does, as holding the projection does.
///
/// ```swift
/// for await count in counter.values {
///     print(count)   // the current value first, then each new one
/// }
/// ```
public struct StateStream<Element: Sendable>: AsyncSequence, Sendable {
    /// What a consumer that is slower than the writers receives.
    public enum Buffering: Sendable {
        /// Only the newest element waits; older unread ones are replaced. Right for state: a slow
        /// consumer skips intermediate values but always ends on the current one.
        case latest
        /// Every element waits, in order, however many pile up. Right for an audit trail; memory
        /// grows while the consumer lags.
        case unbounded

        var policy: AsyncStream<Element>.Continuation.BufferingPolicy {
            switch self {
            case .latest: .bufferingNewest(1)
            case .unbounded: .unbounded
            }
        }
    }

    let buffering: Buffering
    /// Subscribes with a handler for each element and one for the container's release.
    let subscribe: @Sendable (@escaping @Sendable (Element) -> Void, @escaping @Sendable () -> Void) -> Subscription
    /// For a container's or projection's ``MonitoredState/values`` (newest value buffered): binds
    /// a target to that container or projection itself, so that `target <~ source.values`
    /// forwards as `target <~ source` does (stamped, latest value wins: a two-way binding through
    /// `values` settles). `nil` for other sequences, whose elements carry no write to order by.
    let bind: (@Sendable (BindingTarget<Element>) -> Subscription)?

    init(
        buffering: Buffering,
        bind: (@Sendable (BindingTarget<Element>) -> Subscription)? = nil,
        subscribe:
            @escaping @Sendable (@escaping @Sendable (Element) -> Void, @escaping @Sendable () -> Void) -> Subscription
    ) {
        self.buffering = buffering
        self.bind = buffering == .latest ? bind : nil
        self.subscribe = subscribe
    }

    /// Subscribes and returns an iterator over what the subscription receives.
    public func makeAsyncIterator() -> AsyncIterator {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: buffering.policy)
        let subscription = subscribe({ continuation.yield($0) }, { continuation.finish() })
        continuation.onTermination = { _ in subscription.cancel() }
        return AsyncIterator(base: stream.makeAsyncIterator(), subscription: subscription)
    }

    /// Iterates one subscription's buffer.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncStream<Element>.Iterator
        let subscription: Subscription

        /// The next element, or `nil` once the consuming task is cancelled or the container is gone.
        public mutating func next() async -> Element? {
            await base.next()
        }
    }
}
