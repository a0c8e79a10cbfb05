import Foundation
import StateKit
import Testing

/// Wrapper storage is a `var` to the compiler, so a model holding `@Stateful` restates `Sendable`.
final class CounterModel: @unchecked Sendable {
    @Stateful var count = 0
    @Stateful(key: "counter.title") var title = "Counter"
}

@Suite struct StatefulTests {
    @Test func propertyReadsAndWritesThroughItsContainer() {
        let model = CounterModel()
        let seen = Collector<Int>()
        let subscription = model.$count.subscribe { seen.append($0) }
        model.count = 1
        model.$count ~> 2
        model.$count.modify { $0 += 1 }
        #expect(model.count == 3)
        #expect(seen.all == [0, 1, 2, 3])
        model.count = 3
        #expect(model.$count.version == 3)
        subscription.cancel()
    }

    @Test func explicitKeyIsUsedAndMissingKeyNamesTheDeclaration() {
        let model = CounterModel()
        #expect(model.$title.key == "counter.title")
        #expect(model.$count.key == "StateKitTests/StatefulTests.swift:7")
        #expect(CounterModel().$count.key == model.$count.key)
    }

    @Test func eachInstanceHasItsOwnContainer() {
        let first = CounterModel()
        let second = CounterModel()
        first.count = 5
        #expect(second.count == 0)
        #expect(first.$count !== second.$count)
    }

    @Test func projectedContainerOffersProjections() {
        struct Settings: Equatable, Sendable {
            var volume = 5
        }
        final class Player: @unchecked Sendable {
            @Stateful(key: "player.settings") var settings = Settings()
        }
        let player = Player()
        let volumes = Collector<Int>()
        let subscription = player.$settings.volume.subscribe { volumes.append($0) }
        player.settings.volume = 6
        player.$settings.volume ~> 7
        #expect(volumes.all == [5, 6, 7])
        subscription.cancel()
    }
}
