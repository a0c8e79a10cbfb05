import Foundation
import StateKit
import Testing

private func tripled(_ value: Int) -> Int { value * 3 }

/// This file is a client module's use of `~>` and `<~`: it compiles only while StateKit adds
/// `~>` overloads without redeclaring the standard library's operator, and its few dozen uses
/// on nested projections and closures pin that type-checking stays fast.
@Suite struct OperatorTests {
    @Test func assignOperatorTakesLiteralsNegationCallsAndParenthesizedExpressions() {
        let count = MonitoredState(0, key: uniqueKey())
        count ~> 4
        #expect(count.value == 4)
        count ~> -7
        #expect(count.value == -7)
        count ~> tripled(2)
        #expect(count.value == 6)
        let a = 1
        let b = 2
        count ~> (a + b)
        #expect(count.value == 3)
        let maybe: Int? = nil
        count ~> (maybe ?? 11)
        #expect(count.value == 11)
    }

    @Test(.contendingTimeLimit) func closureOperatorIsOneAtomicChange() async {
        let cart = MonitoredState([String](), key: uniqueKey())
        cart ~> { $0.append("apple") }
        cart ~> { $0.append("pear") }
        #expect(cart.value == ["apple", "pear"])
        #expect(cart.version == 2)
        await onThreads(4) { _ in
            for _ in 0..<500 { cart ~> { $0.append("x") } }
        }
        #expect(cart.value.count == 2_002)
    }

    @Test func manyOperatorUsesOnNestedProjectionsTypeCheck() {
        let app = MonitoredState(AppModel(), key: uniqueKey())
        app.user.name ~> "Tim"
        app.user.age ~> 41
        app.user.age ~> -1
        app.user.age ~> (app.user.age.value + 2)
        app.user ~> User(name: "Ann", age: 3)
        app.user ~> { $0.age += 1 }
        app.user.age ~> { $0 *= 2 }
        app.user.name ~> { $0 += "!" }
        app.launches ~> 1
        app.launches ~> { $0 += 1 }
        app.scores ~> { $0[0] = 5 }
        app.observe(\.scores[1]) ~> 6
        app.observe(\.user).name ~> "Bea"
        app.observe(\.user.age) ~> 10
        app ~> { $0.launches += 10 }
        app.user.name ~> ("A" + "B")
        app.user.age ~> (1 + 2 * 3)
        app.launches ~> tripled(3)
        app.user.name ~> String(repeating: "z", count: 2)
        #expect(app.value.user == User(name: "zz", age: 7))
        #expect(app.value.launches == 9)
        #expect(app.value.scores.prefix(2) == [5, 6])
        app ~> AppModel()
        #expect(app.value == AppModel())
        let mirror = MonitoredState(AppModel(), key: uniqueKey())
        let names = MonitoredState("", key: uniqueKey())
        let ages = MonitoredState(0, key: uniqueKey())
        let bindings = [
            mirror <~ app,
            names <~ app.user.name,
            ages <~ app.user.age,
            mirror.user.name <~ names,
            mirror.launches <~ app.launches,
            mirror.user.age <~ ages,
        ]
        app.user.name ~> "Cy"
        app.user.age ~> 50
        app.launches ~> 7
        #expect(names.value == "Cy")
        #expect(ages.value == 50)
        #expect(mirror.value.user == User(name: "Cy", age: 50))
        #expect(mirror.value.launches == 7)
        bindings.forEach { $0.cancel() }
    }

    @Test func bindCopiesCurrentValueAtOnceThenEveryChangeUntilCancelled() {
        let source = MonitoredState(1, key: uniqueKey())
        let target = MonitoredState(0, key: uniqueKey())
        let binding = target <~ source
        #expect(target.value == 1)
        source ~> 2
        #expect(target.value == 2)
        binding.cancel()
        source ~> 3
        #expect(target.value == 2)
    }

    @Test func mutualBindingsOfEquatableValuesSettle() {
        let left = MonitoredState(1, key: uniqueKey())
        let right = MonitoredState(2, key: uniqueKey())
        let bindings = [left <~ right, right <~ left]
        #expect(left.value == right.value)
        left ~> 9
        #expect(right.value == 9)
        right ~> 4
        #expect(left.value == 4)
        bindings.forEach { $0.cancel() }
    }

    /// Values without equality never compare equal, so a two-way binding of them once looped until
    /// the cycle guard cut it (100,000 writes and a cycle diagnostic). A binding now does not take
    /// a value older than the target's newest write: the loop settles after a write or two.
    @Test func aBindingLoopOfValuesWithoutEqualitySettlesWithoutTheCycleGuard() async {
        DiagnosticsRecorder.start()
        final class Box: Sendable {
            let id: Int
            init(_ id: Int) { self.id = id }
        }
        let left = MonitoredState(Box(1), key: uniqueKey("left"))
        let right = MonitoredState(Box(2), key: uniqueKey("right"))
        let bindings = Collector<Subscription>()
        await onThreads(1, stackSize: 256 * 1024) { _ in
            bindings.append(left <~ right)
            bindings.append(right <~ left)
        }
        #expect(DiagnosticsRecorder.diagnostics(involving: left.key).isEmpty)
        #expect(left.value === right.value)
        #expect(left.version + right.version <= 4, "the loop went on: \(left.version), \(right.version)")
        left ~> Box(3)
        #expect(right.value.id == 3)
        #expect(left.version + right.version <= 6)
        bindings.all.forEach { $0.cancel() }
    }
}
