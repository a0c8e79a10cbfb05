import StateKit

let seedArticleSection = TourSection(name: "seed", summary: "the seed article's containers, fixed") {
    print("todo")
}
