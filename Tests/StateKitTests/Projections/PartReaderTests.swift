import Testing

@testable import StateKit

@Suite struct PartReaderTests {
    final class Box: @unchecked Sendable {
        var count = 7
    }

    struct Inner: Equatable {
        var flag = true
        var name = "inner"
        var tags: [String] = ["a"]
    }

    struct Root {
        var id: UInt8 = 3
        var inner = Inner()
        var optional: Int? = 5
        var pair = (1.5, "two")
        var list = [10, 20, 30]
        var box = Box()
        var doubled: Int { Int(id) * 2 }
    }

    @Test func storedPathsReadByOffsetMatchTheKeyPath() {
        var root = Root()
        root.inner.name = "changed, and long enough to live on the heap"
        #expect(MemoryLayout<Root>.offset(of: \Root.inner.name) != nil)
        #expect(PartReader(\Root.id).read(root) == 3)
        #expect(PartReader(\Root.inner).read(root) == root.inner)
        #expect(PartReader(\Root.inner.name).read(root) == root.inner.name)
        #expect(PartReader(\Root.inner.tags).read(root) == ["a"])
        #expect(PartReader(\Root.optional).read(root) == 5)
        #expect(PartReader(\Root.pair.1).read(root) == "two")
    }

    @Test func otherPathsFallBackToTheKeyPath() {
        let root = Root()
        #expect(MemoryLayout<Root>.offset(of: \Root.list[1]) == nil)
        #expect(PartReader(\Root.list[1]).read(root) == 20)
        #expect(PartReader(\Root.doubled).read(root) == 6)
        #expect(PartReader(\Root.box.count).read(root) == 7)
        #expect(PartReader(\Root.optional?.bitWidth).read(root) == Int.bitWidth)
    }

    @Test func aStoredPathProjectionSeesEveryChangeOfItsPart() {
        struct App: Equatable, Sendable {
            var user = User()
            var visits = 0
        }
        struct User: Equatable, Sendable {
            var name = "Ann"
        }
        let app = MonitoredState(App(), key: uniqueKey())
        let seen = Collector<String>()
        let subscription = app.user.name.subscribe { seen.append($0) }
        app.visits ~> 1
        app.user.name ~> "Bob"
        app.modify { $0.user.name += "by" }
        #expect(seen.all == ["Ann", "Bob", "Bobby"])
        #expect(app.user.name.value == "Bobby")
        subscription.cancel()
    }
}
