use reflector::Reflect;

#[derive(Reflect)]
pub struct Widget<T> {
    #[reflect(index)]
    owner: T,
}

fn main() {}
