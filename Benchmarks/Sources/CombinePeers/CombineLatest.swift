import OpenCombine
import Synchronization

/// Combine's `combineLatest(_:_:)` for the derived-state scenario: OpenCombine 0.14, the release
/// the other Combine peers use, does not ship it (its `RemainingCombineInterface.swift` lists it;
/// it arrived on OpenCombine's main branch later). This is Combine's documented behaviour, and
/// no more: a buffer of one value per upstream, and, once both have sent, a tuple of the latest
/// two downstream on every value from either, under one lock, with unlimited demand (what `sink`
/// requests). Without demand bookkeeping or completion handling it is, if anything, cheaper than
/// Combine's own.
///
/// A module of its own, so that the benchmarks and `profile.sh` (`combine2`) run the same code.
public struct CombineLatestPublisher<A: Publisher, B: Publisher>: Publisher
where A.Failure == Never, B.Failure == Never {
    public typealias Output = (A.Output, B.Output)
    public typealias Failure = Never

    let a: A
    let b: B

    public init(a: A, b: B) {
        self.a = a
        self.b = b
    }

    public func receive<S: OpenCombine.Subscriber>(subscriber: S) where S.Input == Output, S.Failure == Never {
        let inner = Inner(downstream: subscriber)
        subscriber.receive(subscription: inner)
        a.subscribe(Side(inner: inner, receive: { inner.receiveA($0) }))
        b.subscribe(Side(inner: inner, receive: { inner.receiveB($0) }))
    }

    /// The latest value of each side, and the downstream subscriber.
    final class Inner<Downstream: OpenCombine.Subscriber>: OpenCombine.Subscription, @unchecked Sendable
    where Downstream.Input == Output, Downstream.Failure == Never {
        private struct Latest {
            var a: A.Output?
            var b: B.Output?
            var upstreams: [any OpenCombine.Subscription] = []
        }

        private let latest = Mutex(Latest())
        private let downstream: Downstream

        init(downstream: Downstream) {
            self.downstream = downstream
        }

        func keep(_ upstream: any OpenCombine.Subscription) {
            latest.withLock { $0.upstreams.append(upstream) }
        }

        func receiveA(_ value: A.Output) {
            let pair: Output? = latest.withLock { latest in
                latest.a = value
                return latest.b.map { (value, $0) }
            }
            if let pair { _ = downstream.receive(pair) }
        }

        func receiveB(_ value: B.Output) {
            let pair: Output? = latest.withLock { latest in
                latest.b = value
                return latest.a.map { ($0, value) }
            }
            if let pair { _ = downstream.receive(pair) }
        }

        func request(_ demand: Subscribers.Demand) {}

        func cancel() {
            let upstreams = latest.withLock { latest in
                defer { latest.upstreams = [] }
                return latest.upstreams
            }
            for upstream in upstreams { upstream.cancel() }
        }

        var combineIdentifier: CombineIdentifier { CombineIdentifier(self) }
    }

    /// One upstream's subscriber: requests everything, hands each value to the inner state.
    struct Side<Input, Downstream: OpenCombine.Subscriber>: OpenCombine.Subscriber
    where Downstream.Input == Output, Downstream.Failure == Never {
        typealias Failure = Never

        let inner: Inner<Downstream>
        let receive: (Input) -> Void
        let combineIdentifier = CombineIdentifier()

        func receive(subscription: any OpenCombine.Subscription) {
            inner.keep(subscription)
            subscription.request(.unlimited)
        }

        func receive(_ input: Input) -> Subscribers.Demand {
            receive(input)
            return .none
        }

        func receive(completion: Subscribers.Completion<Never>) {}
    }
}
