import Testing

@testable import StateKit

@Suite(.timeLimit(.minutes(1)))
struct StateStreamTests {
    struct App: Equatable, Sendable {
        var name = "Ann"
        var visits = 0
    }

    /// Starts `count` consumers of `stream`; each is subscribed and has its first element when this returns.
    private func startConsumers<Element: Sendable>(
        _ count: Int,
        of stream: StateStream<Element>,
        until isLast: @escaping @Sendable (Element) -> Bool
    ) async -> [Task<[Element], Never>] {
        let (ready, readyContinuation) = AsyncStream.makeStream(of: Void.self)
        var consumers: [Task<[Element], Never>] = []
        for _ in 0..<count {
            consumers.append(
                Task {
                    var received: [Element] = []
                    var iterator = stream.makeAsyncIterator()
                    while let element = await iterator.next() {
                        if received.isEmpty { readyContinuation.yield() }
                        received.append(element)
                        if isLast(element) { break }
                    }
                    return received
                })
        }
        var started = 0
        for await _ in ready {
            started += 1
            if started == count { break }
        }
        return consumers
    }

    @Test func everyConcurrentConsumerGetsEveryValueInItsOwnBuffer() async {
        let counter = MonitoredState(0, key: uniqueKey())
        let consumers = await startConsumers(8, of: counter.values(buffering: .unbounded)) { $0 == 100 }
        for value in 1...100 { counter.modify(value) }
        for consumer in consumers {
            #expect(await consumer.value == Array(0...100))
        }
    }

    @Test func latestBufferingHandsASlowConsumerTheNewestValue() async {
        let counter = MonitoredState(0, key: uniqueKey())
        var slow = counter.values.makeAsyncIterator()
        #expect(await slow.next() == 0)
        for value in 1...1_000 { counter.modify(value) }
        #expect(await slow.next() == 1_000)
    }

    @Test func aConsumerThatNeverReadsBlocksNeitherWritersNorOtherConsumers() async {
        let counter = MonitoredState(0, key: uniqueKey())
        var stalled = counter.values(buffering: .unbounded).makeAsyncIterator()
        #expect(await stalled.next() == 0)
        let consumers = await startConsumers(1, of: counter.values(buffering: .unbounded)) { $0 == 500 }
        for value in 1...500 { counter.modify(value) }
        #expect(counter.value == 500)
        #expect(await consumers[0].value == Array(0...500))
        #expect(await stalled.next() == 1)
    }

    @Test func cancellingConsumersEndsTheirSequencesAndFreesTheirSubscriptions() async {
        let counter = MonitoredState(0, key: uniqueKey())
        let before = counter.subscriberCount
        let consumers = await startConsumers(100, of: counter.values) { _ in false }
        #expect(counter.subscriberCount == before + 100)
        for consumer in consumers { consumer.cancel() }
        for consumer in consumers {
            #expect(await consumer.value == [0])
        }
        #expect(counter.subscriberCount == before)
        counter.modify(1)
        #expect(counter.subscriberCount == before)
    }

    @Test func cancellingProjectionConsumersLeavesNoProjectionGroup() async {
        let app = MonitoredState(App(), key: uniqueKey())
        let consumers = await startConsumers(100, of: app.name.values) { _ in false }
        #expect(app.subscriberCount == 1)
        for consumer in consumers { consumer.cancel() }
        for consumer in consumers { _ = await consumer.value }
        #expect(app.subscriberCount == 0)
    }

    @Test func projectionValuesSkipWritesElsewhere() async {
        let app = MonitoredState(App(), key: uniqueKey())
        let consumers = await startConsumers(3, of: app.name.values(buffering: .unbounded)) { $0 == "Cy" }
        app.visits ~> 1
        app.name ~> "Bob"
        app.modify { $0.visits += 1 }
        app.name ~> "Cy"
        for consumer in consumers {
            #expect(await consumer.value == ["Ann", "Bob", "Cy"])
        }
    }

    @Test func changesCarryOldValueNewValueAndVersionInOrder() async {
        let counter = MonitoredState(0, key: uniqueKey())
        var changes = counter.changes.makeAsyncIterator()
        for value in 1...3 { counter.modify(value * 10) }
        var received: [StateChange<Int>] = []
        for _ in 0..<3 {
            if let change = await changes.next() { received.append(change) }
        }
        #expect(received.map(\.oldValue) == [0, 10, 20])
        #expect(received.map(\.newValue) == [10, 20, 30])
        #expect(received.map(\.version) == [1, 2, 3])
    }
}
