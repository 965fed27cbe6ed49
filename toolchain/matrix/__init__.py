"""The project's build matrix (`build --all`, `matrix list|run`) and the CI workflows made from it."""
